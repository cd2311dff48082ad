// Package report writes crab's reports. A report is built once, from an
// analysis.Summary, as a Document — sections holding paragraphs, lists,
// tables of typed cells (figures, text, verdicts) and the arms' verdicts
// with their reasons — and every format renders that document: aligned
// text, Markdown, and a self-contained HTML page that adds charts drawn
// from the records. JSON writes the summary itself (summary.json) and CSV
// one row of unrounded figures per arm.
//
// Formats are registered in one map from name to writer: Write dispatches
// on it, Valid checks a name against it and Names lists it for help text,
// so adding a format means adding one entry.
package report
