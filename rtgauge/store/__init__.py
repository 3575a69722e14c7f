"""The results store: SQLite by default, PostgreSQL for a lab (docs/store.md).

    from rtgauge.store import open_store
    with open_store(None) as store:
        run_id = store.begin_run(system, doctor, "quick", "builtin", argv)
        store.add_measurement(run_id, job, engine_document)
        store.finish_run(run_id, "complete")
"""

from rtgauge.store.schema import SCHEMA_VERSION
from rtgauge.store.store import Store, StoreError, open_store
from rtgauge.store.urls import default_db_path, default_db_url

__all__ = ["SCHEMA_VERSION", "Store", "StoreError", "default_db_path", "default_db_url", "open_store"]
