"""What each namespace's team agreed to in tfgen.yaml (`team`: images, GPUs, quotas, service
accounts, ...), and the Pod Security level its pods are judged by (`pods`, with the controls
in `podsecurity`).
"""
