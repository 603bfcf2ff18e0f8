// Package modelcheck measures a trained model on molecules the user has, before or beside a run: whether the
// flow decodes every molecule back token for token, also after fine-tuning as the optimiser does (Recon); the
// flow as the optimiser's move operator, from the measurements of bo/flowstats (Flowstats); and how well each
// surrogate ranks held-out scored molecules (Fitcheck). Each loads the model, reads the molecules, opens the
// flow and writes its findings to the two writers given (results, messages); "nfbo recon", "nfbo flowstats" and "nfbo fitcheck" are
// flags around them.
package modelcheck
