"""Reports: the suite verdict (`model`) and its renderings (table, JSON, JUnit, files)."""
