"""The run file layer: run.h5 (store), its segment files (segments), checkpoints, the checks of
a file opened for reading (check), the writer lock (lock), atomic writes (atomic) and the
confinement of every write to the run directory (confined)."""
