"""Engines move items between the core operators; `local` runs in-process, `spark` on Spark."""
