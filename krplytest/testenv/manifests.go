package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// Manifests returns the objects of multi-document YAML (or JSON), leaving
// out empty documents.
func Manifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("manifests: document %d: %w", len(out)+1, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// ApplyManifests applies objs to the control plane with server-side apply
// as admin (field manager "krply-testenv"), in order, and returns every
// object's error, each naming the object. With dryRun the server validates
// and admits them (dryRun=All) without persisting anything.
func (e *Env) ApplyManifests(ctx context.Context, objs []*unstructured.Unstructured, dryRun bool) error {
	dyn, err := dynamic.NewForConfig(e.Config())
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(e.Config())
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	opts := metav1.PatchOptions{FieldManager: "krply-testenv", Force: new(true)}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var errs []error
	for _, u := range objs {
		what := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			continue
		}
		body, err := u.MarshalJSON()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			continue
		}
		ri := dyn.Resource(m.Resource)
		var patcher dynamic.ResourceInterface = ri
		if ns := u.GetNamespace(); ns != "" {
			patcher = ri.Namespace(ns)
		}
		if _, err := patcher.Patch(ctx, u.GetName(), types.ApplyPatchType, body, opts); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	return errors.Join(errs...)
}

// RestrictedNamespace creates a namespace whose Pod Security admission
// enforces the "restricted" level (latest), and returns its name.
func (e *Env) RestrictedNamespace(t TB) string {
	t.Helper()
	ns := e.CreateNamespace(t)
	dyn, err := dynamic.NewForConfig(e.Config())
	if err != nil {
		t.Fatalf("restricted namespace: %v", err)
	}
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/enforce-version":"latest"}}}`)
	if _, err := dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Patch(context.Background(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("restricted namespace: %v", err)
	}
	return ns
}

// AdmitPods creates, with a server-side dry run, a Pod from the pod
// template of every Deployment, StatefulSet, DaemonSet and Job of objs in
// namespace ns, and returns every Pod's error naming its workload: in a
// RestrictedNamespace, an error says which Pod Security rule a template
// breaks. It fails when objs hold no workload.
func (e *Env) AdmitPods(ctx context.Context, objs []*unstructured.Unstructured, ns string) error {
	dyn, err := dynamic.NewForConfig(e.Config())
	if err != nil {
		return err
	}
	pods := dyn.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(ns)
	var errs []error
	workloads := 0
	for _, u := range objs {
		switch u.GetKind() {
		case "Deployment", "StatefulSet", "DaemonSet", "Job":
		default:
			continue
		}
		workloads++
		tmpl, found, err := unstructured.NestedMap(u.Object, "spec", "template")
		if err != nil || !found {
			errs = append(errs, fmt.Errorf("%s %s: no pod template (%v)", u.GetKind(), u.GetName(), err))
			continue
		}
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &pod); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: pod template: %w", u.GetKind(), u.GetName(), err))
			continue
		}
		pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		pod.Name, pod.Namespace = u.GetName(), ns
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pod)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := pods.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err))
		}
	}
	if workloads == 0 {
		errs = append(errs, errors.New("no workload among the objects"))
	}
	return errors.Join(errs...)
}
