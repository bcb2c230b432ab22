"""quantd.Progress: what a progress callback receives."""

import collections

# stage: "import", "prepare", "calibrate", "hessian" (HMSE), "select",
# "mixed_precision", "correct", "gptq", "export", "report"; fraction: of this
# stage, in [0, 1];
# message: a human-readable detail.
Progress = collections.namedtuple("Progress", ["stage", "fraction", "message"])
