// Command apicheck keeps krply's exported API deliberate.
//
// It lists the exported API of every public package of the module (all
// packages but internal/, examples/ and commands) in the manner of Go's
// api/*.txt: one line per exported identifier with its full signature,
// struct fields with their tags (the JSON wire schema is part of the
// promise), interface methods, constants with their values. The record is
// checked in at api/krply.txt.
//
//	go run ./tools/apicheck        # check: the API matches the record, every option is exercised
//	go run ./tools/apicheck -w     # write the record (make api)
//
// The check fails when the API differs from the record, printing the lines
// removed (-) and added (+) and the command that updates the record, and
// when an option constructor (an exported With* function, a function
// returning an option type, a type that is an option by conversion such as
// a string type with an apply method) is referenced by no _test.go file and
// no example.
//
// Types come from the export data the go command writes to its build cache
// (go list -export), read with go/importer: the standard library only, and
// no type checking of client-go and apimachinery from source on every run.
package main
