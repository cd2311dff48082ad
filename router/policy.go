package router

// Routing policies, as an experiment names them and a tuner sweeps them.
const (
	// PolicyThreshold is the threshold router (New): a request whose score
	// is at or above the threshold goes to the large model, every other
	// one to the small model. One call per request.
	PolicyThreshold = "threshold"
	// PolicyCascade is the cascade router (NewCascade): the small model
	// answers first; the large model is asked as well when that answer
	// failed (the contract, the backend) or its confidence is below the
	// threshold. Both calls count.
	PolicyCascade = "cascade"
)
