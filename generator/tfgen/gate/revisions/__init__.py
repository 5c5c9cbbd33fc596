"""The repository at a Git base revision against now (`check --base`): the base's tree
(`base`), what a started run cannot take (`livechanges`, traced back to the spec by
`immutability`), and the volumes deleted experiments left in the cluster (`retained`).
"""
