package sim

// langPack holds the answer templates of one language. Templates use
// placeholders that the renderer fills from the request's scope and the
// verdict: {T} tenant, {D} document version, {R} policy reference (itself
// the template policyRef with {P} the policy document's name), {A} account
// phrase (by permission), {ID} account id, {TIER} and {LIMIT} internal
// account details, {C} category name, {N} a negated category's name,
// {X} suggested action, {READ} how much of the ticket was read.
type langPack struct {
	cat         [numCategories]string
	policy      [numCategories]string
	reasonFull  [numCategories]string
	reasonShort [numCategories]string
	action      [numCategories]string
	policyRef   string
	also        string
	negNote     string
	suggested   string
	acctViewer  string
	acctAgent   string
	acctAdmin   string
	background  string
	readAll     string
	readPart    string
	refusal     string
}

// Language indexes into packs.
const (
	langEN = iota
	langDE
	langES
	langZH
)

// packs are the answer templates per language; a scope whose language is
// none of these is answered in English.
var packs = [...]langPack{
	langEN: {
		cat:    [numCategories]string{"billing", "refund", "technical issue", "account access", "shipping", "security", "other"},
		policy: [numCategories]string{"billing terms", "refund policy", "technical support playbook", "account access policy", "shipping policy", "security incident runbook", "general support guide"},
		reasonFull: [numCategories]string{
			"The customer questions a charge or an invoice: the ticket describes an amount, payment or invoice detail that they believe is wrong.",
			"The customer asks for money back: the ticket requests a refund for an order, item or unused service.",
			"The customer reports a product fault: something in the app, API or an integration fails or behaves incorrectly.",
			"The customer cannot access or manage their account: the ticket concerns sign-in, passwords or account settings.",
			"The customer reports a delivery problem: a shipment is late, lost, stuck or was delivered incorrectly.",
			"The ticket describes a possible security incident, such as unauthorised access, phishing or exposed data, which must be handled first.",
			"The ticket describes no billing, refund, technical, account, shipping or security problem; it is a general request or feedback.",
		},
		reasonShort: [numCategories]string{"Disputed charge or invoice.", "Refund request.", "Product fault.", "Account access.", "Delivery problem.", "Possible security incident.", "General request."},
		action: [numCategories]string{
			"review the disputed charge and issue a corrected invoice",
			"check refund eligibility and prepare the refund",
			"collect the error details and open an engineering ticket",
			"verify the customer's identity and restore access",
			"look up the shipment and open a trace with the carrier",
			"lock the affected access, reset credentials and open a security incident",
			"forward the request to the responsible team with a reply draft",
		},
		policyRef:  "{T} {P} {D}",
		also:       " Other topics are mentioned, but the {C} issue is the one the customer asks to have resolved.",
		negNote:    " The ticket says explicitly that it is not about {N}.",
		suggested:  "Draft for agent confirmation: {X} for {A}, per {R}.",
		acctViewer: "the {T} account (internal account details withheld for viewer access)",
		acctAgent:  "account {ID}",
		acctAdmin:  "account {ID} (internal: {TIER} tier, credit limit {LIMIT} units)",
		background: "This answer was prepared for tenant {T} under {R}. {READ} Policy {D} requires a human agent to confirm every suggested action before anything is sent to the customer, and actions that move money or change access need a second reviewer. Tickets in the {C} category are normally resolved within two business days. The evidence quotes the ticket verbatim so that a reviewer can check the classification at a glance.",
		readAll:    "The whole ticket was read and classified from its own wording; no order, billing or account system was queried.",
		readPart:   "Only the opening of the ticket was read, so details further down may have been missed; no order, billing or account system was queried.",
		refusal:    "I'm sorry, but I can't help with this request.",
	},
	langDE: {
		cat:    [numCategories]string{"Abrechnung", "Rückerstattung", "technisches Problem", "Kontozugang", "Versand", "Sicherheit", "Sonstiges"},
		policy: [numCategories]string{"Abrechnungsbedingungen", "Erstattungsrichtlinie", "Technik-Leitfaden", "Richtlinie für Kontozugang", "Versandrichtlinie", "Sicherheits-Notfallplan", "allgemeiner Support-Leitfaden"},
		reasonFull: [numCategories]string{
			"Der Kunde beanstandet eine Abbuchung oder Rechnung: Das Ticket beschreibt einen Betrag, eine Zahlung oder eine Rechnungsangabe, die er für falsch hält.",
			"Der Kunde möchte sein Geld zurück: Das Ticket verlangt eine Rückerstattung für eine Bestellung, einen Artikel oder eine ungenutzte Leistung.",
			"Der Kunde meldet einen Produktfehler: Etwas in der App, der Schnittstelle oder einer Integration funktioniert nicht richtig.",
			"Der Kunde kann sein Konto nicht nutzen oder verwalten: Es geht um Anmeldung, Passwort oder Kontoeinstellungen.",
			"Der Kunde meldet ein Lieferproblem: Eine Sendung ist verspätet, verloren, hängt fest oder wurde falsch zugestellt.",
			"Das Ticket beschreibt einen möglichen Sicherheitsvorfall wie unbefugten Zugriff, Phishing oder offengelegte Daten, der zuerst behandelt werden muss.",
			"Das Ticket beschreibt kein Abrechnungs-, Erstattungs-, Technik-, Konto-, Versand- oder Sicherheitsproblem; es ist eine allgemeine Anfrage oder Rückmeldung.",
		},
		reasonShort: [numCategories]string{"Strittige Abbuchung oder Rechnung.", "Rückerstattungswunsch.", "Produktfehler.", "Kontozugang.", "Lieferproblem.", "Möglicher Sicherheitsvorfall.", "Allgemeine Anfrage."},
		action: [numCategories]string{
			"strittige Abbuchung prüfen und korrigierte Rechnung ausstellen",
			"Erstattungsanspruch prüfen und Rückerstattung vorbereiten",
			"Fehlerdetails sammeln und ein Ticket für die Entwicklung anlegen",
			"Identität des Kunden prüfen und Zugang wiederherstellen",
			"Sendung nachschlagen und Nachforschung beim Zusteller einleiten",
			"betroffenen Zugang sperren, Zugangsdaten zurücksetzen und einen Sicherheitsvorfall eröffnen",
			"Anfrage mit Antwortentwurf an das zuständige Team weiterleiten",
		},
		policyRef:  "{P} von {T}, Version {D}",
		also:       " Weitere Themen werden erwähnt, gelöst werden soll aber das Thema {C}.",
		negNote:    " Das Ticket sagt ausdrücklich, dass es nicht um {N} geht.",
		suggested:  "Entwurf zur Bestätigung durch einen Agenten: {X} für {A}, gemäß {R}.",
		acctViewer: "das Konto von {T} (interne Kontodaten bei Leserechten ausgeblendet)",
		acctAgent:  "Konto {ID}",
		acctAdmin:  "Konto {ID} (intern: Stufe {TIER}, Kreditlimit {LIMIT} Einheiten)",
		background: "Diese Antwort wurde für den Mandanten {T} gemäß {R} erstellt. {READ} Version {D} der Richtlinie verlangt, dass ein Mensch jede vorgeschlagene Maßnahme bestätigt, bevor etwas an den Kunden geht; Maßnahmen, die Geld bewegen oder Zugänge ändern, brauchen eine zweite Prüfung. Tickets der Kategorie {C} werden normalerweise innerhalb von zwei Werktagen gelöst. Die Belege zitieren das Ticket wörtlich, damit die Einordnung schnell geprüft werden kann.",
		readAll:    "Das gesamte Ticket wurde gelesen und anhand seines Wortlauts eingeordnet; kein Bestell-, Abrechnungs- oder Kontosystem wurde abgefragt.",
		readPart:   "Nur der Anfang des Tickets wurde gelesen, spätere Details können fehlen; kein Bestell-, Abrechnungs- oder Kontosystem wurde abgefragt.",
		refusal:    "Es tut mir leid, bei dieser Anfrage kann ich nicht helfen.",
	},
	langES: {
		cat:    [numCategories]string{"facturación", "reembolso", "problema técnico", "acceso a la cuenta", "envío", "seguridad", "otro"},
		policy: [numCategories]string{"condiciones de facturación", "política de reembolsos", "guía de soporte técnico", "política de acceso a cuentas", "política de envíos", "protocolo de incidentes de seguridad", "guía general de soporte"},
		reasonFull: [numCategories]string{
			"El cliente cuestiona un cargo o una factura: el ticket describe un importe, un pago o un dato de factura que considera incorrecto.",
			"El cliente pide que le devuelvan el dinero: el ticket solicita un reembolso de un pedido, un artículo o un servicio no utilizado.",
			"El cliente informa de un fallo del producto: algo en la aplicación, la API o una integración no funciona correctamente.",
			"El cliente no puede acceder a su cuenta o gestionarla: el ticket trata de inicio de sesión, contraseñas o ajustes de la cuenta.",
			"El cliente informa de un problema de entrega: un envío está retrasado, perdido, retenido o se entregó mal.",
			"El ticket describe un posible incidente de seguridad, como un acceso no autorizado, phishing o datos expuestos, que debe atenderse primero.",
			"El ticket no describe un problema de facturación, reembolso, técnico, de cuenta, de envío ni de seguridad; es una consulta general o un comentario.",
		},
		reasonShort: [numCategories]string{"Cargo o factura en disputa.", "Solicitud de reembolso.", "Fallo del producto.", "Acceso a la cuenta.", "Problema de entrega.", "Posible incidente de seguridad.", "Consulta general."},
		action: [numCategories]string{
			"revisar el cargo en disputa y emitir una factura corregida",
			"comprobar si procede el reembolso y prepararlo",
			"reunir los detalles del error y abrir un ticket para ingeniería",
			"verificar la identidad del cliente y restablecer el acceso",
			"localizar el envío y abrir una reclamación con la mensajería",
			"bloquear el acceso afectado, restablecer credenciales y abrir un incidente de seguridad",
			"enviar la consulta al equipo responsable con un borrador de respuesta",
		},
		policyRef:  "{P} de {T}, versión {D}",
		also:       " Se mencionan otros temas, pero el cliente pide resolver el de {C}.",
		negNote:    " El ticket dice expresamente que no se trata de {N}.",
		suggested:  "Borrador para confirmación del agente: {X} para {A}, según {R}.",
		acctViewer: "la cuenta de {T} (datos internos ocultos para el rol de lectura)",
		acctAgent:  "la cuenta {ID}",
		acctAdmin:  "la cuenta {ID} (interno: nivel {TIER}, límite de crédito {LIMIT} unidades)",
		background: "Esta respuesta se preparó para el cliente {T} según {R}. {READ} La versión {D} exige que una persona confirme cada acción propuesta antes de enviar nada al cliente, y las acciones que mueven dinero o cambian accesos necesitan una segunda revisión. Los tickets de la categoría {C} suelen resolverse en dos días hábiles. La evidencia cita el ticket literalmente para que se pueda comprobar la clasificación de un vistazo.",
		readAll:    "Se leyó el ticket completo y se clasificó según su propio texto; no se consultó ningún sistema de pedidos, facturación o cuentas.",
		readPart:   "Solo se leyó el comienzo del ticket, por lo que pueden faltar detalles posteriores; no se consultó ningún sistema de pedidos, facturación o cuentas.",
		refusal:    "Lo siento, no puedo ayudar con esta solicitud.",
	},
	langZH: {
		cat:    [numCategories]string{"账单", "退款", "技术问题", "账户访问", "物流", "安全", "其他"},
		policy: [numCategories]string{"计费条款", "退款政策", "技术支持手册", "账户访问政策", "配送政策", "安全事件处置手册", "通用支持指南"},
		reasonFull: [numCategories]string{
			"客户对一笔扣款或发票有异议：工单描述了客户认为有误的金额、付款或发票信息。",
			"客户要求退款：工单申请对订单、商品或未使用的服务进行退款。",
			"客户报告产品故障：应用、接口或集成中的某个功能无法正常工作。",
			"客户无法访问或管理其账户：工单涉及登录、密码或账户设置。",
			"客户报告配送问题：货件延误、丢失、滞留或被错误投递。",
			"工单描述了可能的安全事件，例如未经授权的访问、钓鱼或数据泄露，必须优先处理。",
			"工单并未描述账单、退款、技术、账户、物流或安全问题，属于一般咨询或反馈。",
		},
		reasonShort: [numCategories]string{"扣款或发票争议。", "退款申请。", "产品故障。", "账户访问。", "配送问题。", "可能的安全事件。", "一般咨询。"},
		action: [numCategories]string{
			"核查有争议的扣款并开具更正后的发票",
			"核实退款资格并准备退款",
			"收集错误详情并向研发提交工单",
			"核验客户身份并恢复访问",
			"查询货件并向承运商发起追踪",
			"锁定受影响的访问、重置凭据并创建安全事件",
			"将请求连同回复草稿转交负责团队",
		},
		policyRef:  "{T} {P} {D}",
		also:       "工单还提到了其他问题，但客户要求解决的是{C}问题。",
		negNote:    "工单明确表示与{N}无关。",
		suggested:  "待客服确认的草稿：依据{R}，为{A}{X}。",
		acctViewer: "{T} 账户（查看者权限不显示内部账户信息）",
		acctAgent:  "账户 {ID} ",
		acctAdmin:  "账户 {ID}（内部：{TIER} 等级，信用额度 {LIMIT} 单位）",
		background: "本回答依据{R}为租户 {T} 生成。{READ}{D} 版政策要求在向客户发送任何内容之前，由人工客服确认每一项建议操作；涉及资金或访问权限变更的操作需要第二人复核。{C}类工单通常在两个工作日内解决。证据逐字引用工单原文，便于审核人员快速核对分类。",
		readAll:    "已完整阅读工单，并仅依据其原文进行分类；未查询任何订单、账单或账户系统。",
		readPart:   "仅阅读了工单开头，后面的细节可能被遗漏；未查询任何订单、账单或账户系统。",
		refusal:    "抱歉，我无法处理这个请求。",
	},
}

// langIndex maps a scope language ("de", "de-DE", "ZH_cn", ...) to a pack;
// anything else is answered in English.
func langIndex(lang string) int {
	if len(lang) < 2 || len(lang) > 2 && lang[2] != '-' && lang[2] != '_' {
		return langEN
	}
	a, b := fold(lang[0]), fold(lang[1])
	switch {
	case a == 'd' && b == 'e':
		return langDE
	case a == 'e' && b == 's':
		return langES
	case a == 'z' && b == 'h':
		return langZH
	}
	return langEN
}

// tiers are the internal service tiers shown to admins.
var tiers = [...]string{"bronze", "silver", "gold"}
