#!/usr/bin/env python3
"""Runs Microsoft's SARIF validator (the pinned @microsoft/sarif-multitool that
tools/setup.sh installs) on a report with GitHub's rule kinds, and fails on any
error. Usage: validate-sarif.py MULTITOOL REPORT.sarif

Prints "validator: N errors, N warnings" and each error's text; exits 1 when
there is an error or the validator cannot run.
"""
import json
import os
import subprocess
import sys
import tempfile

multitool, report = sys.argv[1], sys.argv[2]
if not os.access(multitool, os.X_OK):
    sys.exit(f"validate-sarif: {multitool} not found; run tools/run-tests.sh (it installs "
             "@microsoft/sarif-multitool with npm) or set METAGUARD_SARIF_MULTITOOL")
with tempfile.TemporaryDirectory() as temp:
    log = os.path.join(temp, "validation.sarif")
    proc = subprocess.run([multitool, "validate", "--rule-kind", "Sarif;Gh;Ghas",
                           "--output", log, report], capture_output=True, text=True, check=False)
    if not os.path.exists(log):
        sys.exit(f"validate-sarif: the validator wrote no log (exit {proc.returncode}):\n"
                 f"{proc.stdout}{proc.stderr}")
    with open(log, encoding="utf-8") as handle:
        validation = json.load(handle)
results = [r for run in validation["runs"] for r in run.get("results", [])]
errors = [r for r in results if r.get("level", "warning") == "error"]
warnings = [r for r in results if r.get("level", "warning") == "warning"]
# Notifications: the validator's own problems (e.g. a report it could not parse).
notes = [n for run in validation["runs"] for inv in run.get("invocations", [])
         for n in inv.get("toolExecutionNotifications", []) if n.get("level") == "error"]
print(f"validator: {len(errors) + len(notes)} errors, {len(warnings)} warnings")
for result in errors + notes:
    print(f"  {result.get('ruleId', 'notification')}: {json.dumps(result.get('message'))}")
sys.exit(1 if errors or notes or proc.returncode != 0 else 0)
