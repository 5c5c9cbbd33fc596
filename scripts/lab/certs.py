"""The lab's own certificate authority and keys, made with the machine's `openssl`.

One CA signs one serving certificate that every lab server presents (kube-apiserver and the
three webhook servers all listen on 127.0.0.1, so one certificate with every name they are
called by is enough). The training operator and Kueue manage their webhook certificates with
the same rotator (open-policy-agent/cert-controller), which keeps a pre-created Secret only when
its CA verifies for the rotator's CA name (`training-operator-ca`, `kueue-ca`) and its keys
parse as PKCS#1; otherwise it makes certificates of its own that the lab's webhook
configurations would not trust. So the lab's CA carries those names and every key is PKCS#1.
"""

from __future__ import annotations

import fcntl
import subprocess
from pathlib import Path

from .host import LabError

CA_NAMES = ("training-operator-ca", "kueue-ca", "jobset-ca")
# Every name a lab server is called by: the apiserver's in-cluster names and the webhook
# Services the upstream manifests name (kept so that certificate checks by name pass too).
SERVING_NAMES = (
    "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
    "training-operator.kubeflow.svc", "jobset-webhook-service.jobset-system.svc",
    "kueue-webhook-service.kueue-system.svc",
)
SERVING_IPS = ("127.0.0.1", "10.0.0.1")  # loopback, and the `kubernetes` Service's address
DAYS = "3650"


def _openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"openssl {args[0]} failed: {done.stderr.strip().splitlines()[-1:]}")


def _rsa_key(path: Path) -> None:
    # -traditional: PKCS#1 ("BEGIN RSA PRIVATE KEY"), which every lab component parses
    _openssl("genrsa", "-traditional", "-out", str(path), "2048")


def make_ca(folder: Path) -> None:
    """ca.crt and ca.key: a self-signed CA valid for the names CA_NAMES."""
    _rsa_key(folder / "ca.key")
    _openssl("req", "-x509", "-new", "-key", str(folder / "ca.key"), "-days", DAYS,
             "-subj", "/O=tfgen-lab/CN=tfgen-lab-ca", "-out", str(folder / "ca.crt"),
             "-addext", "subjectAltName=" + ",".join(f"DNS:{n}" for n in CA_NAMES),
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")


def make_serving(folder: Path) -> None:
    """serving.crt and serving.key, signed by the CA, for every name in SERVING_NAMES/IPS."""
    key, csr, ext = folder / "serving.key", folder / "serving.csr", folder / "serving.ext"
    _rsa_key(key)
    _openssl("req", "-new", "-key", str(key), "-subj", "/O=tfgen-lab/CN=tfgen-lab",
             "-out", str(csr))
    sans = [f"DNS:{n}" for n in SERVING_NAMES] + [f"IP:{ip}" for ip in SERVING_IPS]
    ext.write_text("basicConstraints=critical,CA:FALSE\n"
                   "keyUsage=critical,digitalSignature,keyEncipherment\n"
                   "extendedKeyUsage=serverAuth,clientAuth\n"
                   f"subjectAltName={','.join(sans)}\n")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(folder / "ca.crt"),
             "-CAkey", str(folder / "ca.key"), "-set_serial", "2", "-days", DAYS,
             "-extfile", str(ext), "-out", str(folder / "serving.crt"))
    csr.unlink()
    ext.unlink()


def make_all(folder: Path, token_line: str) -> None:
    """The CA, the serving certificate (also as webhook/tls.{crt,key}, controller-runtime's
    names), the service-account key pair and the apiserver's token file: made once per
    checkout and kept (labs side by side share them), under a lock so that two labs starting
    at once do not both write them."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "webhook" / "tls.key").exists():
            return
        make_ca(folder)
        make_serving(folder)
        _rsa_key(folder / "sa.key")
        _openssl("rsa", "-in", str(folder / "sa.key"), "-pubout", "-out",
                 str(folder / "sa.pub"))
        (folder / "tokens.csv").write_text(token_line + "\n")
        (folder / "webhook").mkdir(exist_ok=True)
        for ours, theirs in (("serving.crt", "tls.crt"), ("serving.key", "tls.key")):
            (folder / "webhook" / theirs).write_bytes((folder / ours).read_bytes())
