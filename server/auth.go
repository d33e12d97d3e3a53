package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/krply/krply/internal/reread"
)

// The virtual resources of API group krply.io that SubjectAccessReviews ask
// about.
const (
	// AuthGroup is the API group of the virtual resources.
	AuthGroup = "krply.io"
	// ResourceHistory: verb get reads a namespace's history (in cluster
	// scope: cluster-scoped objects and every namespace); verb create
	// saves snapshots and plans and dry-runs them.
	ResourceHistory = "history"
	// ResourceReplays: verb create applies a plan, in each namespace it
	// writes to.
	ResourceReplays = "replays"
	// ResourceAuditEvents: verb create posts the audit webhook.
	ResourceAuditEvents = "auditevents"
)

// user is who made a request.
type user struct {
	name   string
	uid    string
	groups []string
	extra  map[string]authzv1.ExtraValue
	// all: the request may do everything reads and the handler's enabled
	// writes allow (no authentication configured, or a token-file token).
	all bool
}

// authenticator checks bearer tokens and asks SubjectAccessReviews.
type authenticator struct {
	cfg *config

	// tokenHashes are the SHA-256 of the token file's tokens.
	tokenHashes *reread.Files[map[[32]byte]bool]

	cacheMu sync.Mutex
	tokens  map[[32]byte]cachedUser
	access  map[string]cachedDecision
}

type cachedUser struct {
	u       *user
	expires time.Time
}

type cachedDecision struct {
	allowed bool
	reason  string
	expires time.Time
}

// maxCacheEntries bounds each cache; a full cache is emptied.
const maxCacheEntries = 10000

func newAuthenticator(cfg *config) *authenticator {
	a := &authenticator{cfg: cfg, tokens: map[[32]byte]cachedUser{}, access: map[string]cachedDecision{}}
	if cfg.tokenFile != "" {
		a.tokenHashes = reread.New(func() (map[[32]byte]bool, error) { return readTokenHashes(cfg.tokenFile) }, cfg.tokenFile)
	}
	return a
}

var anonymous = &user{name: "system:anonymous", all: true}

// authenticate returns the request's user, or an Error.
func (a *authenticator) authenticate(r *http.Request) (*user, error) {
	if a.cfg.tokenFile == "" && a.cfg.tokenReviews == nil {
		return anonymous, nil
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		return nil, newError(http.StatusUnauthorized, CodeUnauthenticated, "", "give a bearer token (Authorization: Bearer <token>)")
	}
	sum := sha256.Sum256([]byte(token))
	if a.cfg.tokenFile != "" {
		known, err := a.fileHas(sum)
		if err != nil {
			return nil, newError(http.StatusInternalServerError, CodeInternal, "", "%v", err)
		}
		if known {
			return &user{name: "token-file", all: true}, nil
		}
	}
	if a.cfg.tokenReviews != nil {
		return a.review(r.Context(), token, sum)
	}
	return nil, newError(http.StatusUnauthorized, CodeUnauthenticated, "", "the bearer token is not known")
}

// fileHas reports whether the token file lists the token whose SHA-256
// is sum, reading the file again when it changed.
func (a *authenticator) fileHas(sum [32]byte) (bool, error) {
	hashes, _, err := a.tokenHashes.Get()
	if err != nil {
		return false, fmt.Errorf("server: token file: %w (fix the file given to WithTokenFile / --token-file)", err)
	}
	for h := range hashes {
		if subtle.ConstantTimeCompare(h[:], sum[:]) == 1 {
			return true, nil
		}
	}
	return false, nil
}

// readTokenHashes reads the SHA-256 of each token of the token file.
func readTokenHashes(path string) (map[[32]byte]bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	hashes := map[[32]byte]bool{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		hashes[sha256.Sum256([]byte(line))] = true
	}
	if len(hashes) == 0 {
		return nil, fmt.Errorf("%s lists no token: write one token per line", path)
	}
	return hashes, nil
}

// review authenticates a token with a TokenReview, cached by its hash.
func (a *authenticator) review(ctx context.Context, token string, sum [32]byte) (*user, error) {
	now := time.Now()
	a.cacheMu.Lock()
	c, ok := a.tokens[sum]
	a.cacheMu.Unlock()
	if ok && now.Before(c.expires) {
		if c.u == nil {
			return nil, newError(http.StatusUnauthorized, CodeUnauthenticated, "", "the bearer token is not valid in the cluster")
		}
		return c.u, nil
	}
	tr, err := a.cfg.tokenReviews.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, newError(http.StatusServiceUnavailable, CodeUnavailable, "", "the cluster's TokenReview failed, so the request is refused: %v", err)
	}
	var u *user
	if tr.Status.Authenticated {
		u = &user{name: tr.Status.User.Username, uid: tr.Status.User.UID, groups: tr.Status.User.Groups}
		if len(tr.Status.User.Extra) > 0 {
			u.extra = map[string]authzv1.ExtraValue{}
			for k, v := range tr.Status.User.Extra {
				u.extra[k] = authzv1.ExtraValue(v)
			}
		}
	}
	a.cacheMu.Lock()
	if len(a.tokens) >= maxCacheEntries {
		a.tokens = map[[32]byte]cachedUser{}
	}
	if a.cfg.authTTL > 0 {
		a.tokens[sum] = cachedUser{u: u, expires: now.Add(a.cfg.authTTL)}
	}
	a.cacheMu.Unlock()
	if u == nil {
		return nil, newError(http.StatusUnauthorized, CodeUnauthenticated, "", "the bearer token is not valid in the cluster")
	}
	return u, nil
}

// attributes are what one SubjectAccessReview asks: verb on a virtual
// resource of AuthGroup in a namespace ("" is cluster scope), or, when
// path is set, verb on that non-resource URL (as kube-apiserver asks for
// its own /metrics).
type attributes struct {
	verb, resource, namespace, path string
}

// authorize asks whether u may do verb on resource in each namespace ("",
// or no namespace at all, is cluster scope).
func (a *authenticator) authorize(ctx context.Context, u *user, verb, resource string, namespaces ...string) error {
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		if err := a.check(ctx, u, attributes{verb: verb, resource: resource, namespace: ns}); err != nil {
			return err
		}
	}
	return nil
}

// authorizePath asks whether u may do verb on the non-resource URL path,
// as a ClusterRole's nonResourceURLs rule grants it.
func (a *authenticator) authorizePath(ctx context.Context, u *user, verb, path string) error {
	return a.check(ctx, u, attributes{verb: verb, path: path})
}

// check answers nil when u may do what at asks, else the Error that
// refuses it.
func (a *authenticator) check(ctx context.Context, u *user, at attributes) error {
	if u.all {
		return nil
	}
	allowed, reason, err := a.decide(ctx, u, at)
	if err != nil || allowed {
		return err
	}
	var msg string
	if at.path != "" {
		msg = fmt.Sprintf("user %q may not %s %s (a ClusterRole rule with nonResourceURLs [%s] and verbs [%s] grants it)", u.name, at.verb, at.path, at.path, at.verb)
	} else {
		where := "namespace " + at.namespace
		if at.namespace == "" {
			where = "cluster scope (every namespace and cluster-scoped objects)"
		}
		msg = fmt.Sprintf("user %q may not %s %s.%s in %s", u.name, at.verb, at.resource, AuthGroup, where)
	}
	if reason != "" {
		msg += ": " + reason
	}
	a.cfg.log.V(1).Info("request denied", "user", u.name, "verb", at.verb, "resource", at.resource, "namespace", at.namespace, "path", at.path)
	return newError(http.StatusForbidden, CodeForbidden, "", "%s", msg)
}

// decide makes (or reuses) one SubjectAccessReview.
func (a *authenticator) decide(ctx context.Context, u *user, at attributes) (bool, string, error) {
	groups := append([]string(nil), u.groups...)
	sort.Strings(groups)
	key := strings.Join([]string{u.name, u.uid, strings.Join(groups, ","), fmt.Sprint(u.extra), at.verb, at.resource, at.namespace, at.path}, "\x00")
	now := time.Now()
	a.cacheMu.Lock()
	c, ok := a.access[key]
	a.cacheMu.Unlock()
	if ok && now.Before(c.expires) {
		return c.allowed, c.reason, nil
	}
	spec := authzv1.SubjectAccessReviewSpec{User: u.name, UID: u.uid, Groups: u.groups, Extra: u.extra}
	if at.path != "" {
		spec.NonResourceAttributes = &authzv1.NonResourceAttributes{Path: at.path, Verb: at.verb}
	} else {
		spec.ResourceAttributes = &authzv1.ResourceAttributes{Namespace: at.namespace, Verb: at.verb, Group: AuthGroup, Resource: at.resource}
	}
	got, err := a.cfg.accessReviews.Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, "", newError(http.StatusServiceUnavailable, CodeUnavailable, "", "the cluster's SubjectAccessReview failed, so the request is refused: %v", err)
	}
	reason := got.Status.Reason
	if got.Status.EvaluationError != "" && !got.Status.Allowed {
		reason = strings.TrimSpace(reason + " " + got.Status.EvaluationError)
	}
	a.cacheMu.Lock()
	if len(a.access) >= maxCacheEntries {
		a.access = map[string]cachedDecision{}
	}
	if a.cfg.authTTL > 0 {
		a.access[key] = cachedDecision{allowed: got.Status.Allowed, reason: reason, expires: now.Add(a.cfg.authTTL)}
	}
	a.cacheMu.Unlock()
	return got.Status.Allowed, reason, nil
}
