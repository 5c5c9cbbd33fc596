"""The read side: what runs on the cluster after the merge (`tfgen status`, `logs`,
`tensorboard`), read through the user's kubeconfig with the official Kubernetes client.

It only reads: every change to a run is a commit (`tfgen retire`, a suspend in the spec),
which Argo CD applies; a `kubectl delete` would be undone by its self-heal.
"""

from .connect import ClusterUnreachable, Connection, connect
from .experiments import Connections, Selection, select, statuses, updates
from .views import STATUS_FORMATS

__all__ = ["ClusterUnreachable", "Connection", "Connections", "STATUS_FORMATS", "Selection",
           "connect", "select", "statuses", "updates"]
