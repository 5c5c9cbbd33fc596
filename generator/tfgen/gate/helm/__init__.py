"""The real helm: finding and running it (`command`), installing the pinned builds
(`install`), and rendering many experiments in few processes (`batch`, through an `umbrella`
chart, with helm's values semantics in `values`) where the build is known to allow it (`probe`).
"""
