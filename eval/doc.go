// Package eval runs experiments: it reads an experiment file and the task
// file and contract it names (LoadSetup), builds every arm's stack through
// package stack, plays the same seeded open-loop schedule through each arm
// (arrival patterns are registered Pacers; by default, where two or more
// arms call a model whose latency can depend on load, arms take turns in
// randomised switchback blocks, otherwise every arrival goes to every arm
// at once (paired): see DefaultOrder), judges each answer, and streams one
// records.Record per scheduled request. It also holds the router-tuning
// glue over a run's outcome table.
//
// What happens to records afterwards lives in sub-packages: records reads
// and writes them, analysis summarises them and decides, report renders
// the decision in every format.
package eval
