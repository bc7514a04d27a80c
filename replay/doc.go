// Package replay will simulate a retry topology as a deterministic
// discrete-event model under alternative retry policies and degradations.
package replay
