package main

import (
	"context"

	"github.com/go-logr/logr"
)

// stepDownMessage and stepDownError are what controller-runtime's manager
// logs, as an error with a stack trace, when it releases the lease at a
// stop it was asked for (LeaderElectionReleaseOnCancel): the leader
// elector's OnStoppedLeading reports "leader election lost" once the stop
// is under way, and the manager logs every error it receives then.
const (
	stepDownMessage = "error received after stop sequence was engaged"
	stepDownError   = "leader election lost"
)

// stepDownLogger returns log, except that once stopping (the command's
// context) has ended, the manager's report of the lease it released is an
// info line, not an error: a rollout is no failure. A lease lost while
// running is still an error (and ends the command with exit code 1).
func stepDownLogger(stopping context.Context, log logr.Logger) logr.Logger {
	return logr.New(&stepDownSink{LogSink: log.GetSink(), stopping: stopping})
}

type stepDownSink struct {
	logr.LogSink
	stopping context.Context
}

func (s *stepDownSink) Error(err error, msg string, kv ...any) {
	if msg == stepDownMessage && err != nil && err.Error() == stepDownError && s.stopping.Err() != nil {
		s.LogSink.Info(0, "leader lease released at the stop", kv...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s *stepDownSink) WithValues(kv ...any) logr.LogSink {
	return &stepDownSink{LogSink: s.LogSink.WithValues(kv...), stopping: s.stopping}
}

func (s *stepDownSink) WithName(name string) logr.LogSink {
	return &stepDownSink{LogSink: s.LogSink.WithName(name), stopping: s.stopping}
}
