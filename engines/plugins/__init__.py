"""The programs ms-swift and verl import by path from a run directory: the reward plugin, the reward bridge, the
tool files (:mod:`.entry`, :mod:`.install`)."""
