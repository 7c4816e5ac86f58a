"""`assetbus demo`: the whole pipeline in one process, telling one story (see `story` and `actors`).

The demo's consumer DAGs ship inside the package (`dags.py`), so the demo runs from an installed
wheel or an image as well as from a checkout.
"""
