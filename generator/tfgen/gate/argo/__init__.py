"""Argo CD, offline: the Applications the committed ApplicationSet generates (`applications`,
its Go templates in `gotemplate`), as the cache keeps them (`resolutions`), and whether the
AppProject lets each of them sync (`wiring`).
"""
