"""Writes this rank's launcher environment and arguments as JSON into $REPORT_DIR/<rank>.json (one file per
rank: the ranks' stdout lines may interleave)."""
import json
import os
import sys

keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NODE_RANK"]
with open(os.path.join(os.environ["REPORT_DIR"], f"{os.environ['RANK']}.json"), "w") as f:
    json.dump({"env": {k: os.environ.get(k) for k in keys}, "argv": sys.argv[1:]}, f)
