"""tfgen: distributed TensorFlow experiments on Kubernetes, from one reviewed file in Git."""

__version__ = "0.1.0"
# The distribution that installs the package and the `tfgen` command (pyproject.toml's
# project.name): not `tfgen`, which on the public package index is an unrelated project.
DISTRIBUTION = "tfgen-gitops"
