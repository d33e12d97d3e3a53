package cel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"

	celgo "cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
	kjson "sigs.k8s.io/json"

	"github.com/krply/krply/materialize"
)

// Defaults of the cost limits, in CEL's cost units (about one per
// elementary operation; Kubernetes allows 1,000,000 for one evaluation of
// a validation rule).
const (
	// DefaultCostLimit is the default limit of one evaluation (one
	// version).
	DefaultCostLimit uint64 = 1_000_000
	// DefaultBudget is the default limit of all the evaluations of one
	// request together.
	DefaultBudget uint64 = 1_000_000_000
	// DefaultMaxEstimatedCost is the default bound of the compiler's
	// worst-case estimate of one evaluation. The estimate assumes every
	// list, map and string an expression reads is as large as an object
	// can be, so it is far above what real objects cost: the bound
	// admits a comprehension over an object's lists or maps with string
	// functions on each item and refuses comprehensions nested in
	// comprehensions, whose estimate grows with the square of that size.
	DefaultMaxEstimatedCost uint64 = 1 << 50
)

// maxObjectBytes bounds the size of a Kubernetes object (etcd's default
// request limit is 1.5 MiB; twice that leaves room): the cost estimate
// assumes no list, map or string of a version is larger.
const maxObjectBytes = 3 << 20

// ErrBudgetExceeded is returned (wrapped) by a Predicate whose request
// exhausted its cost budget, or by one evaluation that exceeded the
// per-version limit; the request ends with it.
var ErrBudgetExceeded = errors.New("cel: cost budget exceeded")

// Option adjusts Compile.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	costLimit, budget, maxEstimated uint64
}

// WithCostLimit sets the cost limit of one evaluation (one version);
// DefaultCostLimit when not given. It must be positive.
func WithCostLimit(limit uint64) Option {
	return optionFunc(func(c *config) { c.costLimit = limit })
}

// WithBudget sets the cost budget of one request (all its evaluations
// together); DefaultBudget when not given. It must be positive.
func WithBudget(budget uint64) Option {
	return optionFunc(func(c *config) { c.budget = budget })
}

// WithMaxEstimatedCost sets the bound of the compiler's worst-case cost
// estimate of one evaluation, above which Compile refuses an expression;
// DefaultMaxEstimatedCost when not given. It must be positive.
func WithMaxEstimatedCost(limit uint64) Option {
	return optionFunc(func(c *config) { c.maxEstimated = limit })
}

// Expression is a compiled condition over `object`, an object's version.
// It is safe for concurrent use.
type Expression struct {
	source  string
	program celgo.Program
	cfg     config
	// EstimatedCost is the worst-case cost of one evaluation that the
	// compiler estimated, with lists, maps and strings no larger than an
	// object can be.
	estimated cost.CostEstimate
	// proj is what the expression reads of `object` (nil: all of it, or
	// an expression over other variables).
	proj *projection
}

// CompileError is a CEL expression that does not compile: where and why,
// and a hint at the fix. It wraps materialize.ErrInvalidArgument.
type CompileError struct {
	Expression string `json:"expression"`
	// Line and Column locate the first error, from 1; 0 when the error
	// is about the whole expression (its type, its cost).
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	Reason string `json:"reason"`
	Hint   string `json:"hint,omitempty"`
}

func (e *CompileError) Error() string {
	var b strings.Builder
	b.WriteString("cel: ")
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	}
	b.WriteString(e.Reason)
	if e.Hint != "" {
		b.WriteString(" (" + e.Hint + ")")
	}
	return b.String()
}

// Unwrap makes errors.Is(err, materialize.ErrInvalidArgument) hold.
func (e *CompileError) Unwrap() error { return materialize.ErrInvalidArgument }

// objectEnv is the environment of conditions over objects.
func objectEnv() (*celgo.Env, error) {
	return celgo.NewEnv(append(libraries(), celgo.Variable("object", celgo.DynType))...)
}

// libraries are the CEL libraries every expression may use.
func libraries() []celgo.EnvOption {
	return []celgo.EnvOption{
		celgo.OptionalTypes(),
		ext.Strings(), ext.Lists(), ext.Sets(), ext.Math(), ext.Regex(), ext.Encoders(),
		ext.TwoVarComprehensions(), ext.Network(),
		celgo.CrossTypeNumericComparisons(true),
	}
}

// Compile compiles a condition over `object`, an object's version as
// received (its JSON: integers are int, other numbers double), e.g.
// `object.spec.replicas < 2` or
// `object.spec.template.spec.containers.exists(c, c.image == "x:1.2")`.
func Compile(expression string, opts ...Option) (*Expression, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	env, err := objectEnv()
	if err != nil {
		return nil, fmt.Errorf("cel: environment: %w", err)
	}
	return compileIn(env, "object", expression, cfg)
}

// newConfig applies opts over the defaults and checks them.
func newConfig(opts []Option) (config, error) {
	cfg := config{costLimit: DefaultCostLimit, budget: DefaultBudget, maxEstimated: DefaultMaxEstimatedCost}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.costLimit == 0 || cfg.budget == 0 || cfg.maxEstimated == 0 {
		return cfg, fmt.Errorf("cel: %w: WithCostLimit, WithBudget and WithMaxEstimatedCost need a positive value", materialize.ErrInvalidArgument)
	}
	return cfg, nil
}

func compileIn(env *celgo.Env, variables, expression string, cfg config) (*Expression, error) {
	if strings.TrimSpace(expression) == "" {
		return nil, &CompileError{Expression: expression, Reason: "empty expression", Hint: "write a condition over " + variables + ", e.g. " + exampleFor(variables)}
	}
	ast, iss := env.Compile(expression)
	if iss.Err() != nil {
		return nil, compileError(expression, variables, iss)
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, &CompileError{Expression: expression, Reason: fmt.Sprintf("the expression is of type %s, not a condition", t),
			Hint: "a condition is true or false: compare the value, e.g. " + exampleFor(variables)}
	}
	estimate, err := env.EstimateCost(ast, sizeEstimator{})
	if err != nil {
		return nil, &CompileError{Expression: expression, Reason: "cost estimate: " + err.Error()}
	}
	if estimate.Max > cfg.maxEstimated {
		return nil, &CompileError{Expression: expression,
			Reason: fmt.Sprintf("the estimated worst-case cost of one evaluation exceeds %d", cfg.maxEstimated),
			Hint:   "avoid comprehensions nested in comprehensions over the same lists, or narrow them with a filter first"}
	}
	program, err := env.Program(ast, celgo.CostLimit(cfg.costLimit))
	if err != nil {
		return nil, &CompileError{Expression: expression, Reason: err.Error()}
	}
	e := &Expression{source: expression, program: program, cfg: cfg, estimated: estimate}
	if variables == "object" {
		e.proj = projectionOf(ast.NativeRep(), variables)
	}
	return e, nil
}

func exampleFor(variables string) string {
	if variables == "object" {
		return `object.spec.replicas < 2`
	}
	return `change.paths.exists(p, p.startsWith("spec.template"))`
}

// compileError turns CEL's issues into a CompileError about the first.
func compileError(expression, variables string, iss *celgo.Issues) error {
	errs := iss.Errors()
	if len(errs) == 0 {
		return &CompileError{Expression: expression, Reason: iss.Err().Error()}
	}
	first := errs[0]
	ce := &CompileError{Expression: expression, Reason: first.Message}
	if loc := first.Location; loc != nil && loc.Line() > 0 {
		ce.Line, ce.Column = loc.Line(), loc.Column()+1
	}
	switch msg := first.Message; {
	case strings.Contains(msg, "undeclared reference"):
		ce.Hint = "the variables are " + variables + "; fields are read with a dot, e.g. " + exampleFor(variables)
	case strings.Contains(msg, "found no matching overload"):
		ce.Hint = "the operands are of different types: convert one (int(), string(), double()) or compare with a value of the field's type"
	case strings.HasPrefix(msg, "Syntax error"):
		ce.Hint = "check the brackets, quotes and operators at the column; strings are quoted with \" or '"
	}
	return ce
}

// String returns the expression as given.
func (e *Expression) String() string { return e.source }

// EstimatedCost returns the compiler's estimate of the worst-case cost of
// one evaluation.
func (e *Expression) EstimatedCost() uint64 { return e.estimated.Max }

// Predicate returns a condition for one request, with its own budget.
func (e *Expression) Predicate() *Predicate {
	p := &Predicate{expr: e}
	p.left.Store(e.cfg.budget)
	return p
}

// Predicate is an Expression's condition for one request: a
// materialize.Predicate that counts the cost of its evaluations against
// the request's budget. It is safe for concurrent use
// (materialize.ConcurrentPredicate): the evaluations share the budget,
// and those under way when it runs out finish, each within the cost
// limit of one evaluation.
type Predicate struct {
	expr        *Expression
	left        atomic.Uint64
	evaluations atomic.Int64

	// answers holds the answer for the key of each projection evaluated
	// (projector.appendKey), up to maxAnswerKeyBytes of keys: a version
	// whose projection is one evaluated before gets its answer without
	// an evaluation. Most conditions read few fields, and across a
	// journal those take few values.
	// The answers are in shards by the key's hash, each with its lock:
	// the parts Find sweeps side by side mostly read and write apart.
	shards   [answerShards]answerShard
	keyBytes atomic.Int64
	// lookups and kept count the answers looked for and found, until
	// decided: after keptAfter lookups, when fewer than one in
	// keptAtLeast was found, the projections differ version after
	// version (a field that changes in each, resourceVersion), and off
	// stops keeping and looking.
	lookups, kept atomic.Int64
	decided, off  atomic.Bool
}

// answerShards is how many shards a Predicate's answers are in.
const answerShards = 16

type answerShard struct {
	mu      sync.RWMutex
	answers map[string]answer
}

// seed is the seed of the answers' shard hashes.
var seed = maphash.MakeSeed()

const (
	keptAfter   = 4096
	keptAtLeast = 8
)

// answer is an evaluation's answer: true or false, or the evaluation's
// error on that version.
type answer struct {
	ok  bool
	err error
}

// maxAnswerKeyBytes bounds the keys of a Predicate's answers.
const maxAnswerKeyBytes = 1 << 20

// scratch is the memory of one Match, reused.
type scratch struct {
	d   projector
	key []byte
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

var _ materialize.ConcurrentPredicate = (*Predicate)(nil)

// Concurrent implements materialize.ConcurrentPredicate: Match may be
// called concurrently.
func (p *Predicate) Concurrent() bool { return true }

// Match evaluates the expression with `object` set to the version's body:
// of it, only the fields the expression reads are decoded.
func (p *Predicate) Match(ctx context.Context, object json.RawMessage) (bool, error) {
	if p.expr.proj != nil {
		return p.matchProjected(ctx, object)
	}
	value, err := decode(object)
	if err != nil {
		return false, fmt.Errorf("cel: decode the version: %w", err)
	}
	return p.eval(ctx, &objectActivation{value})
}

// matchProjected is Match of an expression that reads part of object:
// the answer of an earlier version whose projection is the same, or an
// evaluation over the projection.
func (p *Predicate) matchProjected(ctx context.Context, object json.RawMessage) (bool, error) {
	sc := scratches.Get().(*scratch)
	defer func() {
		sc.d.data = nil
		scratches.Put(sc)
	}()
	sc.d.data = object
	if err := sc.d.scan(p.expr.proj); err != nil {
		return false, fmt.Errorf("cel: decode the version: %w", err)
	}
	keep := !p.off.Load()
	var shard *answerShard
	if keep {
		sc.key = sc.d.appendKey(sc.key[:0])
		shard = &p.shards[maphash.Bytes(seed, sc.key)%answerShards]
		shard.mu.RLock()
		a, ok := shard.answers[string(sc.key)]
		shard.mu.RUnlock()
		if !p.decided.Load() {
			n, k := p.lookups.Add(1), p.kept.Load()
			if ok {
				k = p.kept.Add(1)
			}
			if n >= keptAfter {
				p.off.Store(k*keptAtLeast < n)
				p.decided.Store(true)
			}
		}
		if ok {
			return a.ok, a.err
		}
	}
	value, err := sc.d.build()
	if err != nil {
		return false, fmt.Errorf("cel: decode the version: %w", err)
	}
	matched, err := p.eval(ctx, &objectActivation{value})
	var ee evalError
	if keep && (err == nil || errors.As(err, &ee)) && p.keyBytes.Add(int64(len(sc.key))) <= maxAnswerKeyBytes {
		shard.mu.Lock()
		if shard.answers == nil {
			shard.answers = map[string]answer{}
		}
		shard.answers[string(sc.key)] = answer{matched, err}
		shard.mu.Unlock()
	}
	return matched, err
}

// objectActivation binds `object`: cheaper than a map of one variable.
type objectActivation struct{ object any }

func (a *objectActivation) ResolveName(name string) (any, bool) {
	if name == "object" {
		return a.object, true
	}
	return nil, false
}

func (a *objectActivation) Parent() interpreter.Activation { return nil }

func (p *Predicate) eval(ctx context.Context, vars any) (bool, error) {
	if p.left.Load() == 0 {
		return false, fmt.Errorf("%w: the budget of %d was spent after %d evaluations", ErrBudgetExceeded, p.expr.cfg.budget, p.evaluations.Load())
	}
	if done(ctx) {
		return false, ctx.Err()
	}
	p.evaluations.Add(1)
	// Without the context: CEL's ContextEval derives a context from it
	// for every evaluation, which costs about a third of a simple one,
	// and the cost limit bounds an evaluation anyway.
	out, details, err := p.expr.program.Eval(vars)
	if details != nil && details.ActualCost() != nil {
		p.spend(*details.ActualCost())
	}
	switch {
	case done(ctx):
		return false, ctx.Err()
	case err != nil && strings.Contains(err.Error(), "cost limit exceeded"):
		return false, fmt.Errorf("%w: one evaluation exceeded the limit of %d (%v)", ErrBudgetExceeded, p.expr.cfg.costLimit, err)
	case err != nil:
		return false, evalError{err}
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, evalError{fmt.Errorf("the expression gave %v (%s), not true or false", out.Value(), out.Type())}
	}
	return b, nil
}

// done tells whether ctx is done, without a lock.
func done(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// spend takes cost off the budget, down to 0.
func (p *Predicate) spend(cost uint64) {
	for {
		left := p.left.Load()
		if p.left.CompareAndSwap(left, left-min(cost, left)) {
			return
		}
	}
}

// evalError is an expression's failure on one version: CEL's message,
// and materialize.ErrEvaluation for errors.Is.
type evalError struct{ err error }

func (e evalError) Error() string   { return e.err.Error() }
func (e evalError) Unwrap() []error { return []error{e.err, materialize.ErrEvaluation} }

// decode decodes JSON as Kubernetes' unstructured objects hold it:
// integers as int64, other numbers as float64, with the JSON decoder
// Kubernetes decodes them with (sigs.k8s.io/json).
func decode(raw []byte) (any, error) {
	var v any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// sizeEstimator bounds the size of every list, map and string an
// expression reads from its variables by the size of an object.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(element cost.AstNode) *cost.SizeEstimate {
	if element.Path() == nil {
		return nil
	}
	return &cost.SizeEstimate{Min: 0, Max: maxObjectBytes}
}

func (sizeEstimator) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// Conditions returns the compiler of conditions over `object` that the
// query server, the kubectl plugin and other front ends take
// (materialize.Conditions): each Compile compiles with opts and returns a
// Predicate with a fresh budget.
func Conditions(opts ...Option) materialize.Conditions { return conditions(opts) }

type conditions []Option

// CompileChange compiles a change filter (CompileChange): the query
// server's history route filters with it (materialize.ChangeConditions).
func (c conditions) CompileChange(expression string) (materialize.ChangeFilter, error) {
	e, err := CompileChange(expression, c...)
	if err != nil {
		return nil, err
	}
	return e.Filter(), nil
}

func (c conditions) Compile(expression string) (materialize.Predicate, error) {
	e, err := Compile(expression, c...)
	if err != nil {
		return nil, err
	}
	return e.Predicate(), nil
}
