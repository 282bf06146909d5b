#!/bin/sh
# Session 17's validations: every H100 run (../validate_all.sh) into this folder or
# OUTDIR below it. The service time is compared over the requests that ended inside
# the measured window (tally-validate since session 17: the drain after it runs
# without training and hid the contention's error). New runs: the same-seed repeat of
# seed 5 (call2.sh), the tally -k run (call1.sh) and the held-out seed 6 (call3.sh).
# Databases unpacked first (xz -dk FILE.db.xz). From the repository root:
#   sh experiments/results/hw/session17/validate.sh [BUILD [OUTDIR]]
# The files in this folder were made at revision 16 (e67fbe9; seed 6's at 799fb17,
# where churn was still off by default); those in rev17/ with OUTDIR rev17 at revision
# 17 (contention churn on).
exec sh experiments/results/hw/validate_all.sh "${1:-build}" experiments/results/hw/session17/${2:-.}
