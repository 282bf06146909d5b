#!/bin/sh
# Simulated vs measured, per policy, job set and job: inference p99 latency and
# its overhead over the job alone, training throughput relative to alone, and
# system throughput; means over repetitions. Usage: compare.sh SIM.db HW.db
# (both from the same spec and options, e.g. tally-sim and tally-run with
# -s experiments/specs/tally_headline.json -t 3 -w 2 -r 3 -p ...).
set -eu
sim=${1:?usage: compare.sh SIM.db HW.db}
hw=${2:?usage: compare.sh SIM.db HW.db}
sqlite3 -header -column "$hw" <<SQL
ATTACH '$sim' AS s;
CREATE TEMP VIEW hwv AS
  SELECT r.policy, (SELECT name FROM main.jobs WHERE run_id = r.run_id AND job_id = 0) AS pair,
         j.name AS job, j.role, m.name AS metric, avg(m.value) AS value
  FROM main.runs r JOIN main.jobs j ON j.run_id = r.run_id
       JOIN main.metrics m ON m.run_id = r.run_id AND m.job_id = j.job_id
  GROUP BY 1, 2, 3, 4, 5
  UNION ALL
  SELECT r.policy, (SELECT name FROM main.jobs WHERE run_id = r.run_id AND job_id = 0), 'system', '', m.name, avg(m.value)
  FROM main.runs r JOIN main.metrics m ON m.run_id = r.run_id AND m.job_id = -1 GROUP BY 1, 2, 5;
CREATE TEMP VIEW simv AS
  SELECT r.policy, (SELECT name FROM s.jobs WHERE run_id = r.run_id AND job_id = 0) AS pair,
         j.name AS job, j.role, m.name AS metric, avg(m.value) AS value
  FROM s.runs r JOIN s.jobs j ON j.run_id = r.run_id
       JOIN s.metrics m ON m.run_id = r.run_id AND m.job_id = j.job_id
  GROUP BY 1, 2, 3, 4, 5
  UNION ALL
  SELECT r.policy, (SELECT name FROM s.jobs WHERE run_id = r.run_id AND job_id = 0), 'system', '', m.name, avg(m.value)
  FROM s.runs r JOIN s.metrics m ON m.run_id = r.run_id AND m.job_id = -1 GROUP BY 1, 2, 5;
SELECT h.policy, h.pair, h.job, h.metric,
       printf('%.4g', CASE WHEN h.metric LIKE '%_ns' THEN sv.value / 1e6 ELSE sv.value END) AS sim,
       printf('%.4g', CASE WHEN h.metric LIKE '%_ns' THEN h.value / 1e6 ELSE h.value END) AS hw,
       CASE WHEN h.metric IN ('p99_ns', 'throughput', 'system_throughput') AND h.value != 0
            THEN printf('%+.1f%%', 100.0 * (sv.value / h.value - 1)) ELSE '' END AS sim_err
  FROM hwv h JOIN simv sv USING (policy, pair, job, metric)
  WHERE (h.role = 'inference' AND h.metric IN ('p99_ns', 'p99_overhead'))
     OR (h.role = 'training' AND h.metric IN ('throughput', 'throughput_rel'))
     OR (h.job = 'system' AND h.metric = 'system_throughput')
  ORDER BY h.pair, h.policy = 'alone' DESC, h.policy, h.job = 'system', h.job, h.metric;
SQL
