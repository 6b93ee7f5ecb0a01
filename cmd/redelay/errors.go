package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redelay/redelay/inspect"
)

// The exit statuses of the command.
const (
	exitOK      = 0 // the command did what it was asked
	exitFailure = 1 // it failed: Redis, no such queue or item, aborted
	exitUsage   = 2 // it was called wrongly: command, flag, arguments
)

// exitError is an error that says which exit status it causes.
type exitError struct {
	code int
	err  error
}

// Error returns the wrapped error's message.
func (e *exitError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf returns a usage error (exit status 2) with the formatted
// message.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// failure marks err, returned by a command's action, with its exit status:
// 2 for an invalid argument the library refused before doing anything (a
// bad queue name, ID or time), 1 for anything else. An error already
// marked keeps its status; nil stays nil.
func failure(err error) error {
	if err == nil {
		return nil
	}
	var e *exitError
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, inspect.ErrInvalidArgument) {
		return &exitError{code: exitUsage, err: err}
	}
	return &exitError{code: exitFailure, err: err}
}

// exitCode returns the exit status err causes. Errors that no command
// action marked come from the command line parser (an unknown command or
// flag, a bad flag value), so they are usage errors.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return exitUsage
}

// message returns err's message without the library's sentinel texts at
// its end ("redelay: not found"), which only repeat what the message
// already says.
func message(err error) string {
	msg := err.Error()
	for _, sentinel := range []error{inspect.ErrNotFound, inspect.ErrInvalidArgument} {
		if errors.Is(err, sentinel) {
			msg = strings.TrimSuffix(msg, ": "+sentinel.Error())
		}
	}
	return msg
}

// isAnswer reports whether err is the library's answer to the question
// asked (no such queue or item, an argument it refuses) rather than a
// failure to ask it.
func isAnswer(err error) bool {
	return errors.Is(err, inspect.ErrNotFound) || errors.Is(err, inspect.ErrInvalidArgument)
}

// retold is an error told in the command's words: its message is msg,
// and it wraps the error it retells, for errors.Is and errors.As.
type retold struct {
	err error
	msg string
}

// Error returns the message.
func (e *retold) Error() string { return e.msg }

// Unwrap returns the error retold.
func (e *retold) Unwrap() error { return e.err }

// asCommand returns err, from a library call named op at the start of its
// message (`delete "orders": no item "x"`), with op replaced by the
// command's words (`cancel "orders": ...`), so that an error names what
// the user typed; another error comes back as it is.
func asCommand(err error, op, words string) error {
	if err == nil {
		return nil
	}
	if rest, ok := strings.CutPrefix(err.Error(), op+" "); ok {
		return &retold{err: err, msg: words + " " + rest}
	}
	return err
}
