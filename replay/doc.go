// Package replay simulates a retry topology as a deterministic
// discrete-event model under alternative retry policies and degradations.
//
// Every outcome comes from a named mechanism: FIFO queues in front of
// worker pools; a network whose lost packets are resent as TCP resends them
// (RunConfig.RTO, Retransmits) and whose cancels take time to arrive;
// shards chosen by a request's key and replicas chosen at random, both
// splitting a service's workers; cancellation of queued work, and of
// running work only where a service honours it (Service.CancelProb,
// CancelRunning); throughput lost under overload (Service.Thrash); deadlines
// propagated per attempt and dropped before work starts. Each Result
// carries the parameters that can change its verdict (Result.Mechanics)
// and the verdict itself, read from the dynamics after the trigger
// (Result.Verdict, Collapsed, RecoveryS).
package replay
