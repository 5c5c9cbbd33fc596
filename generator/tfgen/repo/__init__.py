"""Facts about a tfgen repository, each defined once: where things are (`layout`), what things
are called (`naming`), what the chart renders (`chart`) and what tfgen ships (`resources`).

The stages read these; nothing here imports a stage.
"""
