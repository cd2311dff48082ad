// Package tune chooses the values crab fits from data, each on a
// calibration split and reported once on a frozen holdout, and is all that
// `crab tune` wires:
//
//   - the outcome table: what each of two models did with every task of an
//     experiment, called once each through its contract and retry layers
//     (Tuner.OutcomeTableFor builds or reads it; Tuner.Samples joins it
//     with the task set);
//   - the threshold router's threshold and the cascade's confidence: Router
//     splits the samples (seeded, stratified by group, repeated questions
//     and near-twins kept on one side), sweeps every candidate threshold on
//     calibration only, picks one by a Rule, and reports it once on the
//     holdout — pass and cost against all-small, all-large and random
//     routing, the misroute matrix, the misrouted tasks with their
//     features, paired bootstrap intervals and the cost–pass Pareto
//     frontier; Fit and Learner fit the learned scorer it routes by;
//   - every semantic-cache arm's similarity threshold (Tuner.Semantic), on
//     the task set's own labelled pairs, with semantic.ChooseThreshold;
//   - the experiment rewritten to use them (Tuner.TunedExperiment) and the
//     files of crab tune -o (Tuner.WriteDir), every one carrying the
//     identity of the calibration tasks (FittedFor).
//
// Routing policies are replayed from the table: no threshold choice calls
// a model. The values chosen configure package router's threshold and
// cascade routers and the semantic cache; what runs at request time lives
// there, and package eval runs the arms.
package tune
