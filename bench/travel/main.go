// Command travel writes a seeded multilingual workload of another domain
// than crab's embedded demo — travel-booking support in seven languages,
// with its own contract — and, given a crab binary, measures on it what
// the simulated models and a router tuned by crab tune achieve:
//
//	go run ./bench/travel -crab ./crab -out DIR
//
// It writes DIR/tasks.jsonl, DIR/booking.schema.json and
// DIR/experiment.yaml, runs `crab run` and `crab tune` on them and prints
// the figures. With -gen-only it writes the files and stops.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The contract of the workload: nothing in it is triage.
const contractJSON = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "booking support",
  "type": "object",
  "properties": {
    "intent": {"type": "string", "enum": ["change_date", "cancel", "refund", "baggage", "seat", "invoice", "complaint"], "description": "What the traveller wants done."},
    "priority": {"type": "string", "enum": ["low", "normal", "urgent"], "description": "urgent when the trip starts within two days."},
    "escalate": {"type": "boolean", "description": "true when a supervisor must act: a complaint, or an amount above 500."},
    "booking_ref": {"type": ["string", "null"], "pattern": "^[A-Z]{2}[0-9]{4}$", "description": "The booking reference, null when none is given."},
    "summary": {"type": "string", "minLength": 1, "maxLength": 400},
    "quotes": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string", "minLength": 1}}
  },
  "required": ["intent", "priority", "escalate", "booking_ref", "summary", "quotes"],
  "additionalProperties": false
}
`

var intents = []string{"change_date", "cancel", "refund", "baggage", "seat", "invoice", "complaint"}

// lang holds the sentences of one language: one request per intent, with
// {REF}, {DAYS} and {AMOUNT} slots, and the parts that make a request
// harder to read — another question, a negation, context.
type lang struct {
	code     string
	greet    string
	ask      []string // per intent
	urgent   string   // {DAYS}
	amount   string   // {AMOUNT}
	extra    []string // a second question
	negation string   // {OTHER}: the request is not about another topic
	topic    []string // names of the intents, for the negation
	context  []string // filler sentences
	closing  string
}

var langs = []lang{
	{code: "en", greet: "Hello,", closing: "Thanks in advance.",
		ask:    []string{"I need to move my booking {REF} to a later date.", "Please cancel my booking {REF}.", "I would like a refund for booking {REF}.", "My suitcase did not arrive with booking {REF}.", "Can I choose another seat on booking {REF}?", "I need an invoice for booking {REF}.", "I am very unhappy with how booking {REF} was handled."},
		urgent: "We leave in {DAYS} days.", amount: "The amount in question is {AMOUNT} euros.",
		extra:    []string{"Can you also tell me whether breakfast is included?", "And is the airport transfer still booked?"},
		negation: "This is not about the {OTHER}.", topic: []string{"date change", "cancellation", "refund", "baggage", "seat", "invoice", "complaint"},
		context: []string{"We booked the trip through your website in spring for the whole family.", "I already called twice and waited on hold for a long time.", "My partner handles the payments, so the card is in her name."}},
	{code: "fr", greet: "Bonjour,", closing: "Merci d'avance.",
		ask:    []string{"Je dois déplacer ma réservation {REF} à une date ultérieure.", "Merci d'annuler ma réservation {REF}.", "Je souhaite être remboursé pour la réservation {REF}.", "Ma valise n'est pas arrivée avec la réservation {REF}.", "Puis-je choisir une autre place pour la réservation {REF} ?", "J'ai besoin d'une facture pour la réservation {REF}.", "Je suis très mécontent de la gestion de la réservation {REF}."},
		urgent: "Nous partons dans {DAYS} jours.", amount: "Le montant concerné est de {AMOUNT} euros.",
		extra:    []string{"Pouvez-vous aussi me dire si le petit-déjeuner est inclus ?", "Et le transfert depuis l'aéroport est-il toujours réservé ?"},
		negation: "Il ne s'agit pas de la demande de {OTHER}.", topic: []string{"changement de date", "annulation", "remboursement", "bagages", "place", "facture", "réclamation"},
		context: []string{"Nous avons réservé le voyage sur votre site au printemps pour toute la famille.", "J'ai déjà appelé deux fois et attendu longtemps.", "Mon conjoint gère les paiements, la carte est donc à son nom."}},
	{code: "pt", greet: "Olá,", closing: "Obrigado desde já.",
		ask:    []string{"Preciso de mudar a minha reserva {REF} para uma data posterior.", "Por favor cancelem a minha reserva {REF}.", "Gostaria de um reembolso da reserva {REF}.", "A minha mala não chegou com a reserva {REF}.", "Posso escolher outro lugar na reserva {REF}?", "Preciso de uma fatura da reserva {REF}.", "Estou muito insatisfeito com a forma como a reserva {REF} foi tratada."},
		urgent: "Partimos daqui a {DAYS} dias.", amount: "O valor em causa é de {AMOUNT} euros.",
		extra:    []string{"Podem também dizer-me se o pequeno-almoço está incluído?", "E o transfere do aeroporto continua reservado?"},
		negation: "Não se trata do pedido de {OTHER}.", topic: []string{"mudança de data", "cancelamento", "reembolso", "bagagem", "lugar", "fatura", "reclamação"},
		context: []string{"Reservámos a viagem no vosso site na primavera para toda a família.", "Já liguei duas vezes e esperei muito tempo.", "O meu marido trata dos pagamentos, por isso o cartão está em nome dele."}},
	{code: "it", greet: "Buongiorno,", closing: "Grazie in anticipo.",
		ask:    []string{"Devo spostare la prenotazione {REF} a una data successiva.", "Vi prego di cancellare la prenotazione {REF}.", "Vorrei un rimborso per la prenotazione {REF}.", "La mia valigia non è arrivata con la prenotazione {REF}.", "Posso scegliere un altro posto per la prenotazione {REF}?", "Mi serve una fattura per la prenotazione {REF}.", "Sono molto scontento di come è stata gestita la prenotazione {REF}."},
		urgent: "Partiamo tra {DAYS} giorni.", amount: "L'importo in questione è di {AMOUNT} euro.",
		extra:    []string{"Potete anche dirmi se la colazione è inclusa?", "E il trasferimento dall'aeroporto è ancora prenotato?"},
		negation: "Non si tratta della richiesta di {OTHER}.", topic: []string{"cambio data", "cancellazione", "rimborso", "bagaglio", "posto", "fattura", "reclamo"},
		context: []string{"Abbiamo prenotato il viaggio sul vostro sito in primavera per tutta la famiglia.", "Ho già chiamato due volte e ho atteso a lungo.", "Mia moglie gestisce i pagamenti, quindi la carta è intestata a lei."}},
	{code: "nl", greet: "Goedendag,", closing: "Alvast bedankt.",
		ask:    []string{"Ik moet mijn boeking {REF} naar een latere datum verzetten.", "Annuleer alstublieft mijn boeking {REF}.", "Ik wil graag een terugbetaling voor boeking {REF}.", "Mijn koffer is niet aangekomen bij boeking {REF}.", "Kan ik een andere stoel kiezen bij boeking {REF}?", "Ik heb een factuur nodig voor boeking {REF}.", "Ik ben erg ontevreden over de afhandeling van boeking {REF}."},
		urgent: "We vertrekken over {DAYS} dagen.", amount: "Het bedrag in kwestie is {AMOUNT} euro.",
		extra:    []string{"Kunt u ook zeggen of het ontbijt inbegrepen is?", "En is de transfer vanaf het vliegveld nog geboekt?"},
		negation: "Het gaat niet om de {OTHER}.", topic: []string{"datumwijziging", "annulering", "terugbetaling", "bagage", "stoel", "factuur", "klacht"},
		context: []string{"We hebben de reis in het voorjaar via uw website voor het hele gezin geboekt.", "Ik heb al twee keer gebeld en lang gewacht.", "Mijn partner regelt de betalingen, dus de kaart staat op haar naam."}},
	{code: "pl", greet: "Dzień dobry,", closing: "Z góry dziękuję.",
		ask:    []string{"Muszę przesunąć rezerwację {REF} na późniejszy termin.", "Proszę anulować moją rezerwację {REF}.", "Chciałbym zwrot pieniędzy za rezerwację {REF}.", "Moja walizka nie dotarła przy rezerwacji {REF}.", "Czy mogę wybrać inne miejsce w rezerwacji {REF}?", "Potrzebuję faktury za rezerwację {REF}.", "Jestem bardzo niezadowolony z obsługi rezerwacji {REF}."},
		urgent: "Wyjeżdżamy za {DAYS} dni.", amount: "Chodzi o kwotę {AMOUNT} euro.",
		extra:    []string{"Czy mogą Państwo też powiedzieć, czy śniadanie jest wliczone?", "I czy transfer z lotniska jest nadal zarezerwowany?"},
		negation: "Nie chodzi o sprawę: {OTHER}.", topic: []string{"zmiana daty", "anulowanie", "zwrot", "bagaż", "miejsce", "faktura", "reklamacja"},
		context: []string{"Zarezerwowaliśmy podróż na Państwa stronie wiosną dla całej rodziny.", "Dzwoniłem już dwa razy i długo czekałem.", "Płatności zajmuje się żona, więc karta jest na jej nazwisko."}},
	{code: "ja", greet: "こんにちは。", closing: "よろしくお願いします。",
		ask:    []string{"予約 {REF} の日程を後ろに変更したいです。", "予約 {REF} をキャンセルしてください。", "予約 {REF} の返金をお願いします。", "予約 {REF} のスーツケースが届いていません。", "予約 {REF} の座席を変更できますか？", "予約 {REF} の請求書が必要です。", "予約 {REF} の対応にとても不満です。"},
		urgent: "出発まであと{DAYS}日です。", amount: "金額は{AMOUNT}ユーロです。",
		extra:    []string{"朝食が含まれているかも教えてもらえますか？", "空港送迎はまだ予約されていますか？"},
		negation: "{OTHER}の件ではありません。", topic: []string{"日程変更", "キャンセル", "返金", "手荷物", "座席", "請求書", "苦情"},
		context: []string{"春に家族全員分の旅行をウェブサイトで予約しました。", "すでに二回電話して長い時間待ちました。", "支払いは妻が担当しているのでカードは妻の名義です。"}},
}

type task struct {
	ID         string         `json:"id"`
	Text       string         `json:"text"`
	Tenant     string         `json:"tenant"`
	User       string         `json:"user"`
	Permission string         `json:"permission"`
	Lang       string         `json:"lang"`
	DocVersion string         `json:"doc_version"`
	Group      string         `json:"group"`
	Expected   map[string]any `json:"expected"`
}

// generate writes n tasks, seeded. The expected intent, priority and
// escalation follow from what the text says.
func generate(n int, seed uint64) []task {
	g := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var out []task
	for i := range n {
		l := langs[i%len(langs)]
		intent := g.IntN(len(intents))
		ref := fmt.Sprintf("%c%c%04d", 'A'+rune(g.IntN(26)), 'A'+rune(g.IntN(26)), g.IntN(10000))
		var parts []string
		parts = append(parts, l.greet)
		long := g.Float64() < 0.35
		if long {
			parts = append(parts, l.context[:1+g.IntN(len(l.context))]...)
		}
		if g.Float64() < 0.3 {
			other := (intent + 1 + g.IntN(len(intents)-1)) % len(intents)
			parts = append(parts, strings.ReplaceAll(l.negation, "{OTHER}", l.topic[other]))
		}
		parts = append(parts, strings.ReplaceAll(l.ask[intent], "{REF}", ref))
		priority := "normal"
		switch d := g.IntN(10); {
		case d < 3:
			priority = "urgent"
			parts = append(parts, strings.ReplaceAll(l.urgent, "{DAYS}", fmt.Sprint(1+g.IntN(2))))
		case d < 5:
			priority = "low"
			parts = append(parts, strings.ReplaceAll(l.urgent, "{DAYS}", fmt.Sprint(30+g.IntN(60))))
		}
		escalate := intents[intent] == "complaint"
		if g.Float64() < 0.4 {
			amt := 50 + g.IntN(900)
			escalate = escalate || amt > 500
			parts = append(parts, strings.ReplaceAll(l.amount, "{AMOUNT}", fmt.Sprint(amt)))
		}
		if g.Float64() < 0.35 {
			parts = append(parts, l.extra[g.IntN(len(l.extra))])
		}
		parts = append(parts, l.closing)
		sep := " "
		if l.code == "ja" {
			sep = ""
		}
		group := "short"
		if long {
			group = "long"
		}
		tenant := []string{"alpstours", "baltic", "coastline"}[g.IntN(3)]
		out = append(out, task{
			ID: fmt.Sprintf("b%04d", i+1), Text: strings.Join(parts, sep), Tenant: tenant, User: fmt.Sprintf("%s-u%d", tenant, g.IntN(20)),
			Permission: []string{"agent", "viewer", "admin"}[g.IntN(3)], Lang: l.code, DocVersion: "2025-1", Group: group,
			Expected: map[string]any{"intent": intents[intent], "priority": priority, "escalate": escalate},
		})
	}
	return out
}

const experiment = `# travel-booking support in seven languages, on the simulated models
name: travel
tasks: tasks.jsonl
contract: booking.schema.json
seed: 11
time_scale: 0
arrival: {pattern: burst}
concurrency: 8
timeout: 5s
models:
  - {name: small, kind: small, price_in_per_mtok: 0.15, price_out_per_mtok: 0.60}
  - {name: large, kind: large, price_in_per_mtok: 2.50, price_out_per_mtok: 10.00}
arms:
  - {name: baseline, model: large}
  - {name: small_only, model: small}
  - {name: router, router: {threshold: 0.5, small: small, large: large}}
`

func main() {
	crab := flag.String("crab", "", "crab binary to measure with")
	out := flag.String("out", "", "directory to write the workload into (required)")
	n := flag.Int("n", 700, "tasks to generate")
	seed := flag.Uint64("seed", 7, "generator seed")
	genOnly := flag.Bool("gen-only", false, "write the workload and stop")
	legacy := flag.Bool("legacy-labels", false, "name the graded fields category (the intent) and needs_human_review (the escalation) and grade only those two, for a crab whose task format knows no other expected fields")
	flag.Parse()
	if *out == "" || (*crab == "" && !*genOnly) {
		fmt.Fprintln(os.Stderr, "usage: travel -out DIR [-crab BIN | -gen-only] [-n N] [-seed S]")
		os.Exit(2)
	}
	graded := writeWorkload(*out, *n, *seed, *legacy)
	if *genOnly {
		return
	}
	exp := filepath.Join(*out, "experiment.yaml")
	fmt.Printf("workload: %d tasks, 7 languages (en fr pt it nl pl ja), contract booking.schema.json (%s)\n", *n, graded)
	fmt.Printf("$ crab check --lint %s\n", filepath.Join(*out, "booking.schema.json"))
	run(*crab, "check", "--lint", filepath.Join(*out, "booking.schema.json"))
	measureRun(*crab, exp, filepath.Join(*out, "run"))
	measureTune(*crab, exp)
}

// writeWorkload writes the tasks, the contract and the experiment into
// out, and returns which fields are graded.
func writeWorkload(out string, n int, seed uint64, legacy bool) string {
	if err := os.MkdirAll(out, 0o755); err != nil {
		fail(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	contract := contractJSON
	graded := "intent, priority, escalate graded"
	for _, t := range generate(n, seed) {
		if legacy {
			t.Expected = map[string]any{"category": t.Expected["intent"], "needs_human_review": t.Expected["escalate"]}
		}
		enc.Encode(t)
	}
	if legacy {
		contract = strings.NewReplacer(`"intent"`, `"category"`, `"escalate"`, `"needs_human_review"`).Replace(contract)
		graded = "intent (as category) and escalate (as needs_human_review) graded"
	}
	write(filepath.Join(out, "tasks.jsonl"), b.Bytes())
	write(filepath.Join(out, "booking.schema.json"), []byte(contract))
	write(filepath.Join(out, "experiment.yaml"), []byte(experiment))
	return graded
}

// measureRun runs the experiment into dir and prints each arm's
// contract-valid and passing shares.
func measureRun(crab, exp, dir string) {
	fmt.Printf("\n$ crab run -e %s -o %s -q && crab report --format json %s\n", exp, dir, dir)
	output(crab, "run", "-e", exp, "-o", dir, "-q", "--overwrite")
	var sum struct {
		Arms []struct {
			Name string `json:"name"`
			N    int    `json:"n"`
			OK   int    `json:"ok"`
			Pass int    `json:"pass"`
		} `json:"arms"`
	}
	if err := json.Unmarshal(output(crab, "report", "--format", "json", dir), &sum); err != nil {
		fail(err)
	}
	for _, a := range sum.Arms {
		fmt.Printf("  %-10s contract-valid %d/%d (%.1f%%), pass %d/%d (%.1f%%)\n", a.Name, a.OK, a.N, 100*float64(a.OK)/float64(a.N), a.Pass, a.N, 100*float64(a.Pass)/float64(a.N))
	}
}

// tuneHoldout is the part of `crab tune --format json` measureTune prints.
type tuneHoldout struct {
	Holdout struct {
		N            int     `json:"n"`
		Pass         int     `json:"pass"`
		PassAllLarge int     `json:"pass_all_large"`
		PassAllSmall int     `json:"pass_all_small"`
		StrongShare  float64 `json:"strong_share"`
		Planned      float64 `json:"strong_share_calibration"`
		Random       struct {
			Seeds    int     `json:"seeds"`
			PassMean float64 `json:"pass_mean"`
			PassMax  int     `json:"pass_max"`
		} `json:"random"`
		RouteLLM *struct {
			APGR  float64 `json:"apgr"`
			CPT50 float64 `json:"cpt_50"`
			CPT80 float64 `json:"cpt_80"`
		} `json:"routellm"`
	} `json:"holdout"`
}

// measureTune tunes the router with each scorer and rule and prints its
// holdout figures beside the all-large, all-small and random routings.
func measureTune(crab, exp string) {
	fmt.Printf("\n$ crab tune -e %s -q --format json [--budget B] [--scorer S]\n", exp)
	var tj tuneHoldout
	for _, tc := range []struct{ scorer, budget string }{{"learn", ""}, {"learn", "0.0008"}, {"feature", "0.0008"}} {
		args := []string{"tune", "-e", exp, "-q", "--format", "json", "--scorer", tc.scorer}
		rule := "--max-pass-loss 0"
		if tc.budget != "" {
			args = append(args, "--budget", tc.budget)
			rule = "--budget " + tc.budget
		}
		if err := json.Unmarshal(output(crab, args...), &tj); err != nil {
			fail(err)
		}
		sc := tc.scorer + ", " + rule
		h := tj.Holdout
		beat := "does not beat"
		if h.Pass > h.Random.PassMax {
			beat = "beats"
		}
		fmt.Printf("  %-26s holdout %d tasks: router pass %d (all-large %d, all-small %d) at strong share %.1f%% (planned %.1f%%); %s the best of %d random routings at that share (%d, mean %.1f)",
			sc, h.N, h.Pass, h.PassAllLarge, h.PassAllSmall, 100*h.StrongShare, 100*h.Planned, beat, h.Random.Seeds, h.Random.PassMax, h.Random.PassMean)
		if r := h.RouteLLM; r != nil {
			fmt.Printf("; apgr %.3f, cpt_50 %.1f%%, cpt_80 %.1f%%", r.APGR, 100*r.CPT50, 100*r.CPT80)
		}
		fmt.Println()
	}
}

func run(bin string, args ...string) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && args[0] == "run" {
			return // a rejected candidate is a verdict, not a failure here
		}
		fail(fmt.Errorf("crab %s: %v", strings.Join(args, " "), err))
	}
}

func output(bin string, args ...string) []byte {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			fail(fmt.Errorf("crab %s: %v", strings.Join(args, " "), err))
		}
	}
	return b
}

func write(path string, b []byte) {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "travel:", err)
	os.Exit(1)
}
