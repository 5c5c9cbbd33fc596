"""The JSON Schemas tfgen ships, applied: validation compiled once (`validator`), its errors in
words (`messages`, each pattern's words in `patterns`), and the defaults it declares
(`defaults`).
"""
