"""tfgen: distributed TensorFlow experiments on Kubernetes, from one reviewed file in Git."""

__version__ = "0.1.0"
