"""What two experiments may not share: a name or a volume (`names`), a log directory
(`logdirs`), the name of an object they render (`objectnames`).
"""
