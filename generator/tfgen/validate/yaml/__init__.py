"""Strict YAML: a file's bytes -> a document whose every value knows its line and column
(`loader`, the careful walk in `nodes`, the `document` and its locator), syntax errors in
words (`errors`).
"""
