// Package records is crab's record of what each request did: the Record
// (one line of records.jsonl), its writer, and the readers of records.jsonl
// and interchange CSV that every command shares.
//
// ReadSet merges several inputs (run directories, records.jsonl files,
// CSV files, stdin) into a RecordSet, the compact form statistics and
// charts read; a records file whose last line a dying process cut short is
// read up to that line and reported as a TornError. ReadEach reads the same
// inputs with the same checks but hands each full record to a function
// instead of keeping it, for writers that stream (crab export). ReadAnswers reads the
// answers of records.jsonl (or of any JSONL file with task_id and output)
// leniently, for validating them against a contract. Every fault in an
// input is an *InputError naming the file, line and field.
package records
