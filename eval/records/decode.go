package records

import (
	"strconv"
	"time"

	"github.com/crab-testbed/crab/internal/inputerr"
	"github.com/crab-testbed/crab/internal/jsonw"
)

// decodeLine decodes one records.jsonl line into rec, exactly as the strict
// decoder (inputerr.DecodeStrict) does: the same record, or the same error.
// line and raw are the same bytes; strings of rec may alias line, which
// must therefore never change afterwards.
//
// Lines of the shape crab writes (known keys, each once, plain values of
// the field's type) are read by a lean scanner, several times faster than
// the reflective decoder and without its allocations. Anything else — an
// unknown, repeated or differently cased key, a null, a value of another
// type, a number out of range, a surrogate escape that does not pair,
// invalid UTF-8, malformed JSON — goes to the strict decoder, so the
// result and any error are exactly its own.
func decodeLine(line string, raw []byte, rec *Record) error {
	*rec = Record{}
	if scanRecord(line, raw, rec) {
		return nil
	}
	*rec = Record{}
	return inputerr.DecodeStrict(raw, rec)
}

// scanRecord is the lean reading of decodeLine; it reports false when the
// line is outside the shape it accepts, leaving rec partly filled.
func scanRecord(line string, raw []byte, rec *Record) bool {
	l := recordLexer{jsonw.New(line, jsonw.PlainKeys|jsonw.SurrogatePairs), raw}
	var seen uint64
	ok := l.Object(func(key string) bool {
		f, known := fieldOf(key)
		if !known || seen&(1<<f) != 0 {
			return false // encoding/json's to judge (or to merge a repeated key)
		}
		seen |= 1 << f
		return l.field(f, rec)
	})
	return ok && l.End()
}

// recordLexer reads a line; raw is the same bytes as its text.
type recordLexer struct {
	jsonw.Lexer
	raw []byte
}

// The fields of a Record, as the lean scanner numbers them (at most 64).
const (
	fRunID = iota
	fArm
	fRepeat
	fSeq
	fWarmup
	fShard
	fTaskID
	fGroup
	fDifficulty
	fTenant
	fPermission
	fLang
	fDocVersion
	fIntendedAt
	fSentAt
	fFirstByteAt
	fDoneAt
	fLagMs
	fQueueMs
	fCacheMs
	fRouteMs
	fModelMs
	fTTFTMs
	fValidateMs
	fE2EMs
	fSlotWait
	fOutcome
	fError
	fCache
	fLeak
	fScopeMismatch
	fSimilarity
	fCacheOrigin
	fFalseHit
	fModel
	fRouteScore
	fRouted
	fRouteFallback
	fMisroute
	fEscalated
	fAttempts
	fTokensIn
	fTokensOut
	fCost
	fShadowCost
	fEscalationCost
	fContract
	fContractOK
	fViolations
	fCategory
	fExpected
	fCorrect
	fPass
	fGradeReason
	fGradeError
	fGradeCost
	fGradeMs
	fOutput
	nFields
)

// fieldOf is the number of the Record field with JSON key key; ok is
// false for any other key (a test checks it against the struct tags).
func fieldOf(key string) (f uint8, ok bool) {
	switch key {
	case "run_id":
		return fRunID, true
	case "arm":
		return fArm, true
	case "repeat":
		return fRepeat, true
	case "seq":
		return fSeq, true
	case "warmup":
		return fWarmup, true
	case "shard":
		return fShard, true
	case "task_id":
		return fTaskID, true
	case "group":
		return fGroup, true
	case "difficulty":
		return fDifficulty, true
	case "tenant":
		return fTenant, true
	case "permission":
		return fPermission, true
	case "lang":
		return fLang, true
	case "doc_version":
		return fDocVersion, true
	case "intended_at":
		return fIntendedAt, true
	case "sent_at":
		return fSentAt, true
	case "first_byte_at":
		return fFirstByteAt, true
	case "done_at":
		return fDoneAt, true
	case "lag_ms":
		return fLagMs, true
	case "queue_ms":
		return fQueueMs, true
	case "cache_ms":
		return fCacheMs, true
	case "route_ms":
		return fRouteMs, true
	case "model_ms":
		return fModelMs, true
	case "ttft_ms":
		return fTTFTMs, true
	case "validate_ms":
		return fValidateMs, true
	case "e2e_ms":
		return fE2EMs, true
	case "slot_wait":
		return fSlotWait, true
	case "outcome":
		return fOutcome, true
	case "error":
		return fError, true
	case "cache":
		return fCache, true
	case "leak":
		return fLeak, true
	case "scope_mismatch":
		return fScopeMismatch, true
	case "similarity":
		return fSimilarity, true
	case "cache_origin":
		return fCacheOrigin, true
	case "false_hit":
		return fFalseHit, true
	case "model":
		return fModel, true
	case "route_score":
		return fRouteScore, true
	case "routed":
		return fRouted, true
	case "route_fallback":
		return fRouteFallback, true
	case "misroute":
		return fMisroute, true
	case "escalated":
		return fEscalated, true
	case "attempts":
		return fAttempts, true
	case "tokens_in":
		return fTokensIn, true
	case "tokens_out":
		return fTokensOut, true
	case "cost":
		return fCost, true
	case "shadow_cost":
		return fShadowCost, true
	case "escalation_cost":
		return fEscalationCost, true
	case "contract":
		return fContract, true
	case "contract_ok":
		return fContractOK, true
	case "violations":
		return fViolations, true
	case "category":
		return fCategory, true
	case "expected":
		return fExpected, true
	case "correct":
		return fCorrect, true
	case "pass":
		return fPass, true
	case "grade_reason":
		return fGradeReason, true
	case "grade_error":
		return fGradeError, true
	case "grade_cost":
		return fGradeCost, true
	case "grade_ms":
		return fGradeMs, true
	case "output":
		return fOutput, true
	}
	return 0, false
}

// field reads the value of field f into rec.
func (l *recordLexer) field(f uint8, rec *Record) bool {
	switch f {
	case fRunID:
		return l.str(&rec.RunID)
	case fArm:
		return l.str(&rec.Arm)
	case fRepeat:
		return l.int(&rec.Repeat)
	case fSeq:
		return l.int(&rec.Seq)
	case fWarmup:
		return l.bool(&rec.Warmup)
	case fShard:
		return l.str(&rec.Shard)
	case fTaskID:
		return l.str(&rec.TaskID)
	case fGroup:
		return l.str(&rec.Group)
	case fDifficulty:
		return l.str(&rec.Difficulty)
	case fTenant:
		return l.str(&rec.Tenant)
	case fPermission:
		return l.str(&rec.Permission)
	case fLang:
		return l.str(&rec.Lang)
	case fDocVersion:
		return l.str(&rec.DocVersion)
	case fIntendedAt:
		return l.time(&rec.IntendedAt)
	case fSentAt:
		return l.time(&rec.SentAt)
	case fFirstByteAt:
		return l.time(&rec.FirstByteAt)
	case fDoneAt:
		return l.time(&rec.DoneAt)
	case fLagMs:
		return l.float(&rec.LagMs)
	case fQueueMs:
		return l.float(&rec.QueueMs)
	case fCacheMs:
		return l.float(&rec.CacheMs)
	case fRouteMs:
		return l.float(&rec.RouteMs)
	case fModelMs:
		return l.float(&rec.ModelMs)
	case fTTFTMs:
		return l.float(&rec.TTFTMs)
	case fValidateMs:
		return l.float(&rec.ValidateMs)
	case fE2EMs:
		return l.float(&rec.E2EMs)
	case fSlotWait:
		return l.bool(&rec.SlotWait)
	case fOutcome:
		return l.str(&rec.Outcome)
	case fError:
		return l.str(&rec.Error)
	case fCache:
		return l.str(&rec.Cache)
	case fLeak:
		return l.str(&rec.Leak)
	case fScopeMismatch:
		return l.bool(&rec.ScopeMismatch)
	case fSimilarity:
		return l.float(&rec.Similarity)
	case fCacheOrigin:
		return l.str(&rec.CacheOrigin)
	case fFalseHit:
		return l.bool(&rec.FalseHit)
	case fModel:
		return l.str(&rec.Model)
	case fRouteScore:
		return l.float(&rec.RouteScore)
	case fRouted:
		return l.bool(&rec.Routed)
	case fRouteFallback:
		return l.bool(&rec.RouteFallback)
	case fMisroute:
		return l.str(&rec.Misroute)
	case fEscalated:
		return l.bool(&rec.Escalated)
	case fAttempts:
		return l.int(&rec.Attempts)
	case fTokensIn:
		return l.int(&rec.TokensIn)
	case fTokensOut:
		return l.int(&rec.TokensOut)
	case fCost:
		return l.float(&rec.Cost)
	case fShadowCost:
		return l.float(&rec.ShadowCost)
	case fEscalationCost:
		return l.float(&rec.EscalationCost)
	case fContract:
		return l.str(&rec.Contract)
	case fContractOK:
		return l.bool(&rec.ContractOK)
	case fViolations:
		return l.strings(&rec.Violations)
	case fCategory:
		return l.str(&rec.Category)
	case fExpected:
		return l.str(&rec.Expected)
	case fCorrect:
		return l.bool(&rec.Correct)
	case fPass:
		return l.bool(&rec.Pass)
	case fGradeReason:
		return l.str(&rec.GradeReason)
	case fGradeError:
		return l.str(&rec.GradeError)
	case fGradeCost:
		return l.float(&rec.GradeCost)
	case fGradeMs:
		return l.float(&rec.GradeMs)
	case fOutput:
		return l.str(&rec.Output)
	}
	return false
}

func (l *recordLexer) str(dst *string) bool {
	v, ok := l.String()
	*dst = v
	return ok
}

func (l *recordLexer) bool(dst *bool) bool {
	v, ok := l.Bool()
	*dst = v
	return ok
}

func (l *recordLexer) int(dst *int) bool {
	v, ok := l.Int()
	*dst = v
	return ok
}

// float reads a number as encoding/json does into a float64; one out of
// range is refused (encoding/json fails on it).
func (l *recordLexer) float(dst *float64) bool {
	t, ok := l.Number()
	if !ok {
		return false
	}
	v, err := strconv.ParseFloat(t, 64)
	*dst = v
	return err == nil
}

// time reads a string through time.Time's own UnmarshalJSON, given the
// raw string (escapes included) as encoding/json gives it.
func (l *recordLexer) time(dst *time.Time) bool {
	l.WS()
	start := l.Pos()
	if !l.SkipString() {
		return false
	}
	return dst.UnmarshalJSON(l.raw[start:l.Pos()]) == nil
}

// strings reads an array of strings; an empty one is an empty slice, as
// encoding/json makes it.
func (l *recordLexer) strings(dst *[]string) bool {
	vs := []string{}
	ok := l.Array(func() bool {
		v, ok := l.String()
		vs = append(vs, v)
		return ok
	})
	*dst = vs
	return ok
}
