// Package analysis turns records into the figures and the decision crab
// reports: per-arm summaries (nearest-rank percentiles over every request
// and over successful ones, cost per passing task, cache and routing
// figures, schedule lag and queue time), intervals, the paired comparison of
// each candidate with the baseline task by task, failures clustered in time,
// and the gate, which decides every candidate's verdict: quality first,
// then guardrails, then the declared objective.
//
// Summarize reads a records.RecordSet; every percentile is
// internal/quantile's nearest rank. The decision's reasons, warnings and
// notes are sentences (summary.json carries them as strings), worded here
// with the rounding every report format shares.
package analysis
