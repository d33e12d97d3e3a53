package replay

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/krply/krply/event"
)

func TestDefaultExclusions(t *testing.T) {
	owned := `{"metadata":{"name":"x","ownerReferences":[{"kind":"Deployment","name":"web","controller":true}]}}`
	unowned := `{"metadata":{"name":"x","ownerReferences":[{"kind":"Thing","name":"t"}]}}`
	plain := `{"metadata":{"name":"x"}}`
	tests := []struct {
		name     string
		k        objectKind
		body     string
		rule     ExclusionRule // "" when the object is kept by default
		optIn    Policy        // a policy that lets it in; zero when nothing does
		noOptIn  bool
		reasonIn string
	}{
		{"secret", objectKind{Resource: "secrets", Name: "x"}, `{"type":"Opaque"}`, RuleSecrets, Policy{AllowSecrets: true}, false, "AllowSecrets"},
		{"token secret", objectKind{Resource: "secrets", Name: "x"}, `{"type":"kubernetes.io/service-account-token"}`, RuleServiceAccounts,
			Policy{AllowSecrets: true, AllowServiceAccounts: true}, false, "service account token"},
		{"service account", objectKind{Resource: "serviceaccounts", Name: "x"}, plain, RuleServiceAccounts, Policy{AllowServiceAccounts: true}, false, "AllowServiceAccounts"},
		{"role", objectKind{Group: "rbac.authorization.k8s.io", Resource: "roles"}, plain, RuleRBAC, Policy{AllowRBAC: true}, false, "AllowRBAC"},
		{"cluster role binding", objectKind{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}, plain, RuleRBAC, Policy{AllowRBAC: true}, false, "permissions"},
		{"bare pod", objectKind{Resource: "pods"}, plain, RulePods, Policy{AllowPods: true}, false, "AllowPods"},
		{"owned pod", objectKind{Resource: "pods"}, owned, RuleControllerOwned, Policy{}, true, "owned by Deployment/web"},
		{"job", objectKind{Group: "batch", Resource: "jobs"}, plain, RuleJobs, Policy{AllowJobs: true}, false, "AllowJobs"},
		{"cronjob", objectKind{Group: "batch", Resource: "cronjobs"}, plain, RuleJobs, Policy{AllowJobs: true}, false, "side effects"},
		{"job owned by cronjob", objectKind{Group: "batch", Resource: "jobs"}, owned, RuleControllerOwned, Policy{}, true, "recreates"},
		{"pvc", objectKind{Resource: "persistentvolumeclaims"}, plain, RuleStorage, Policy{AllowStorage: true}, false, "AllowStorage"},
		{"pv", objectKind{Resource: "persistentvolumes"}, plain, RuleStorage, Policy{AllowStorage: true}, false, "disks"},
		{"storage class", objectKind{Group: "storage.k8s.io", Resource: "storageclasses"}, plain, RuleStorage, Policy{AllowStorage: true}, false, "provisioners"},
		{"load balancer", objectKind{Resource: "services"}, `{"spec":{"type":"LoadBalancer"}}`, RuleLoadBalancers, Policy{AllowLoadBalancers: true}, false, "external"},
		{"cluster IP service", objectKind{Resource: "services"}, `{"spec":{"type":"ClusterIP"}}`, "", Policy{}, false, ""},
		{"webhook", objectKind{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}, plain, RuleWebhooks, Policy{AllowWebhooks: true}, false, "intercept"},
		{"crd", objectKind{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, plain, RuleCRDs, Policy{AllowCRDs: true}, false, "AllowCRDs"},
		{"event", objectKind{Resource: "events"}, plain, RuleEvents, Policy{}, true, "history"},
		{"events.k8s.io event", objectKind{Group: "events.k8s.io", Resource: "events"}, plain, RuleEvents, Policy{}, true, "history"},
		{"lease", objectKind{Group: "coordination.k8s.io", Resource: "leases"}, plain, RuleLeases, Policy{}, true, "coordination"},
		{"endpoints", objectKind{Resource: "endpoints"}, plain, RuleEndpoints, Policy{}, true, "controllers"},
		{"endpoint slice", objectKind{Group: "discovery.k8s.io", Resource: "endpointslices"}, plain, RuleEndpoints, Policy{}, true, "controllers"},
		{"owned replica set", objectKind{Group: "apps", Resource: "replicasets"}, owned, RuleControllerOwned, Policy{}, true, "owned by Deployment/web"},
		{"owned controller revision", objectKind{Group: "apps", Resource: "controllerrevisions"}, owned, RuleControllerOwned, Policy{}, true, "recreates"},
		{"replica set with a non-controller owner", objectKind{Group: "apps", Resource: "replicasets"}, unowned, "", Policy{}, false, ""},
		{"kube-root-ca.crt", objectKind{Resource: "configmaps", Name: "kube-root-ca.crt"}, plain, RuleClusterPublished, Policy{}, true, "publishes"},
		{"config map", objectKind{Resource: "configmaps", Name: "settings"}, plain, "", Policy{}, false, ""},
		{"deployment", objectKind{Group: "apps", Resource: "deployments"}, plain, "", Policy{}, false, ""},
		{"custom object", objectKind{Group: "example.com", Resource: "widgets"}, plain, "", Policy{}, false, ""},
	}
	everything := Policy{AllowSecrets: true, AllowServiceAccounts: true, AllowRBAC: true, AllowPods: true, AllowJobs: true,
		AllowStorage: true, AllowLoadBalancers: true, AllowWebhooks: true, AllowCRDs: true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := mustDecode(t, tt.body)
			rule, reason, excluded := excludedBy(Policy{}, tt.k, body)
			if tt.rule == "" {
				if excluded {
					t.Fatalf("excluded by default (%s: %s), want kept", rule, reason)
				}
				return
			}
			if !excluded || rule != tt.rule {
				t.Fatalf("excluded = %v, rule %q; want rule %q", excluded, rule, tt.rule)
			}
			if !strings.Contains(reason, tt.reasonIn) {
				t.Errorf("reason %q does not mention %q", reason, tt.reasonIn)
			}
			if tt.noOptIn {
				if _, _, still := excludedBy(everything, tt.k, body); !still {
					t.Errorf("every opt-in let it in; it must always be excluded")
				}
				return
			}
			if r, why, still := excludedBy(tt.optIn, tt.k, body); still {
				t.Errorf("opt-in %+v still excludes it: %s: %s", tt.optIn, r, why)
			}
		})
	}
	for _, info := range DefaultExclusions() {
		if info.Reason == "" || info.What == "" {
			t.Errorf("default exclusion %s has no description or reason", info.Rule)
		}
	}
}

func TestPolicySelects(t *testing.T) {
	deploy := objectKind{Group: "apps", Kind: "Deployment", Resource: "deployments", Name: "web-1"}
	cm := objectKind{Kind: "ConfigMap", Resource: "configmaps", Name: "settings"}
	tests := []struct {
		p          Policy
		k          objectKind
		wantSelect bool
	}{
		{Policy{}, deploy, true},
		{Policy{Kinds: []string{"Deployment"}}, deploy, true},
		{Policy{Kinds: []string{"deployments"}}, deploy, true},
		{Policy{Kinds: []string{"deployments.apps"}}, deploy, true},
		{Policy{Kinds: []string{"deployment"}}, deploy, true},
		{Policy{Kinds: []string{"Deployment"}}, cm, false},
		{Policy{Names: []string{"web-*"}}, deploy, true},
		{Policy{Names: []string{"web-*"}}, cm, false},
		{Policy{Kinds: []string{"ConfigMap"}, Names: []string{"web-*"}}, cm, false},
	}
	for _, tt := range tests {
		if got, reason := selectedBy(tt.p, tt.k); got != tt.wantSelect {
			t.Errorf("%+v selects %s/%s = %v (%s), want %v", tt.p, tt.k.Kind, tt.k.Name, got, reason, tt.wantSelect)
		}
	}
}

func TestOrdering(t *testing.T) {
	ref := func(group, resource, ns, name string) event.ResourceRef {
		return event.ResourceRef{Group: group, Resource: resource, Namespace: ns, Name: name}
	}
	want := []event.ResourceRef{
		ref("", "namespaces", "", "a"),
		ref("", "namespaces", "", "b"),
		ref("apiextensions.k8s.io", "customresourcedefinitions", "", "widgets.example.com"),
		ref("", "limitranges", "a", "lr"),
		ref("", "resourcequotas", "a", "q"),
		ref("", "configmaps", "a", "c1"),
		ref("", "configmaps", "a", "c2"),
		ref("", "configmaps", "b", "c1"),
		ref("", "secrets", "a", "s"),
		ref("", "serviceaccounts", "a", "sa"),
		ref("rbac.authorization.k8s.io", "roles", "a", "r"),
		ref("", "services", "a", "svc"),
		ref("", "pods", "a", "p"),
		ref("apps", "deployments", "a", "web"),
		ref("apps", "statefulsets", "a", "db"),
		ref("batch", "jobs", "a", "j"),
		ref("example.com", "widgets", "a", "w"),
		ref("networking.k8s.io", "ingresses", "a", "i"),
		ref("admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "hook"),
	}
	for seed := uint64(0); seed < 20; seed++ {
		objs := make([]Object, len(want))
		for i, r := range want {
			objs[i] = Object{Ref: r}
		}
		rng := rand.New(rand.NewPCG(seed, seed))
		rng.Shuffle(len(objs), func(i, j int) { objs[i], objs[j] = objs[j], objs[i] })
		sortObjects(objs)
		for i := range want {
			if objs[i].Ref != want[i] {
				t.Fatalf("seed %d: position %d is %s, want %s", seed, i, objs[i].Ref, want[i])
			}
		}
	}
}
