package model

import "testing"

// SetScopeFields replaces the table of scope fields until the end of the
// test, so a test can show that every consumer follows the table. Tests
// that call it must not run in parallel.
func SetScopeFields(t testing.TB, fields []ScopeField) {
	oldFields, oldColumns := scopeFields, scopeColumns
	scopeFields, scopeColumns = fields, columnOrder(fields)
	t.Cleanup(func() { scopeFields, scopeColumns = oldFields, oldColumns })
}
