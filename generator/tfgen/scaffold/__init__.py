"""The scaffold stage: a new tfgen repository from what tfgen ships (`tfgen init`). It sits
above the gate (it names the gate's cache in `.gitignore`) and renders argo/ through render."""

from .init import InitResult, defaults, init_repository
from .settings import NODE_TYPE_FORM, InitSettings, SettingsError

__all__ = ["NODE_TYPE_FORM", "InitResult", "InitSettings", "SettingsError", "defaults",
           "init_repository"]
