package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// source lists and watches the objects of one stream. Its lists and
// watches yield the objects as *unstructured.Unstructured (through a
// dynamic.Interface) or as *rawObject (through a REST client: the bodies as
// the server sent them).
type source interface {
	list(ctx context.Context, opts metav1.ListOptions) (page, error)
	watch(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error)
}

// page is one page of a list.
type page struct {
	resourceVersion string
	continueToken   string
	items           []runtime.Object
}

// dynamicSource lists and watches through a dynamic.Interface: client-go
// decodes every object into an unstructured.Unstructured.
type dynamicSource struct {
	ri dynamic.ResourceInterface
}

func (d dynamicSource) list(ctx context.Context, opts metav1.ListOptions) (page, error) {
	list, err := d.ri.List(ctx, opts)
	if err != nil {
		return page{}, err
	}
	p := page{resourceVersion: list.GetResourceVersion(), continueToken: list.GetContinue(), items: make([]runtime.Object, len(list.Items))}
	for i := range list.Items {
		p.items[i] = &list.Items[i]
	}
	return p, nil
}

func (d dynamicSource) watch(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	return d.ri.Watch(ctx, opts)
}

// rawSource lists and watches through a REST client made by newRawClient:
// objects are *rawObject, holding the bytes the server sent, and only the
// fields the Collector needs are read from them.
type rawSource struct {
	rc   rest.Interface
	path []string
}

// newRawSource returns the source of resource gvr (in namespace ns when
// not empty).
func newRawSource(rc rest.Interface, gvr schema.GroupVersionResource, ns string) rawSource {
	path := []string{"api"}
	if gvr.Group != "" {
		path = []string{"apis", gvr.Group}
	}
	path = append(path, gvr.Version)
	if ns != "" {
		path = append(path, "namespaces", ns)
	}
	return rawSource{rc: rc, path: append(path, gvr.Resource)}
}

func (r rawSource) list(ctx context.Context, opts metav1.ListOptions) (page, error) {
	res := r.rc.Get().AbsPath(r.path...).SpecificallyVersionedParams(&opts, parameterCodec, metav1.Unversioned).Do(ctx)
	if err := res.Error(); err != nil {
		return page{}, err
	}
	body, err := res.Raw()
	if err != nil {
		return page{}, err
	}
	lp, err := readListPage(body)
	if err != nil {
		return page{}, fmt.Errorf("decode list: %w", err)
	}
	p := page{resourceVersion: lp.resourceVersion, continueToken: lp.continueToken, items: make([]runtime.Object, len(lp.items))}
	for i, item := range lp.items {
		m, err := readObjectMeta(item)
		if err != nil {
			return page{}, fmt.Errorf("decode list item %d: %w", i, err)
		}
		p.items[i] = &rawObject{raw: item, meta: m}
	}
	return p, nil
}

func (r rawSource) watch(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	opts.Watch = true
	return r.rc.Get().AbsPath(r.path...).SpecificallyVersionedParams(&opts, parameterCodec, metav1.Unversioned).Watch(ctx)
}

// parameterCodec encodes ListOptions into query parameters, as the dynamic
// client does.
var parameterCodec = func() runtime.ParameterCodec {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.Unversioned)
	return runtime.NewParameterCodec(scheme)
}()

// newRawClient returns a REST client for cfg whose lists and watches keep
// the JSON bodies the server sent (see rawSource).
func newRawClient(cfg *rest.Config) (*rest.RESTClient, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	cfg.NegotiatedSerializer = rawSerializers{}
	cfg.GroupVersion = nil
	cfg.APIPath = "/"
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.UnversionedRESTClientFor(cfg)
}

// rawObject is an object as the server sent it, with what the Collector
// reads of it.
type rawObject struct {
	raw  []byte
	meta objectMeta
}

// GetObjectKind implements runtime.Object.
func (o *rawObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (o *rawObject) DeepCopyObject() runtime.Object {
	c := *o
	c.raw = append([]byte(nil), o.raw...)
	c.meta.annotations = append([]byte(nil), o.meta.annotations...)
	return &c
}

// rawSerializers is the NegotiatedSerializer of newRawClient: JSON only,
// decoding watch events with rawEventDecoder and objects with
// rawObjectDecoder. It encodes nothing: the Collector sends no bodies.
type rawSerializers struct{}

func (rawSerializers) SupportedMediaTypes() []runtime.SerializerInfo {
	return []runtime.SerializerInfo{{
		MediaType:        "application/json",
		MediaTypeType:    "application",
		MediaTypeSubType: "json",
		EncodesAsText:    true,
		Serializer:       rawObjectDecoder{},
		StreamSerializer: &runtime.StreamSerializerInfo{
			EncodesAsText: true,
			Serializer:    rawEventDecoder{},
			Framer:        rawFramer{},
		},
	}}
}

func (rawSerializers) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

func (rawSerializers) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

var errRawEncode = errors.New("watch: the raw client sends no bodies")

// rawObjectDecoder decodes a body into a *rawObject (a copy of the bytes),
// or into a *metav1.Status when the body is one (errors and watch ERROR
// events).
type rawObjectDecoder struct{}

func (rawObjectDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, _ runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	raw := append([]byte(nil), data...)
	m, err := readObjectMeta(raw)
	if err != nil {
		return nil, nil, err
	}
	gvk := schema.FromAPIVersionAndKind(m.apiVersion, m.kind)
	if m.kind == "Status" && (m.apiVersion == "v1" || m.apiVersion == "" && defaults != nil && defaults.Group == "" && defaults.Version == "v1") {
		var status metav1.Status
		if err := json.Unmarshal(raw, &status); err != nil {
			return nil, nil, fmt.Errorf("decode Status: %w", err)
		}
		return &status, &gvk, nil
	}
	return &rawObject{raw: raw, meta: m}, &gvk, nil
}

func (rawObjectDecoder) Encode(runtime.Object, io.Writer) error { return errRawEncode }

func (rawObjectDecoder) Identifier() runtime.Identifier { return "krply-raw-json" }

// rawEventDecoder decodes a watch event frame into a *metav1.WatchEvent
// whose object keeps the bytes of the frame (copied: frames are reused).
type rawEventDecoder struct{}

func (rawEventDecoder) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	ev, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("watch: raw event decoder cannot decode into %T", into)
	}
	typ, obj, err := readWatchEvent(data)
	if err != nil {
		return nil, nil, err
	}
	ev.Type = typ
	ev.Object = runtime.RawExtension{Raw: obj}
	return ev, &schema.GroupVersionKind{Version: "v1", Kind: "WatchEvent"}, nil
}

func (rawEventDecoder) Encode(runtime.Object, io.Writer) error { return errRawEncode }

func (rawEventDecoder) Identifier() runtime.Identifier { return "krply-raw-watch-event" }

// bookmarkOf returns the resourceVersion of a BOOKMARK event's object and
// whether it ends a WatchList's initial events.
func bookmarkOf(obj runtime.Object) (rv string, initialEventsEnd bool, err error) {
	if o, ok := obj.(*rawObject); ok {
		v, err := o.meta.annotation(initialEventsEndAnnotation)
		return o.meta.resourceVersion, v == "true", err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false, err
	}
	return m.GetResourceVersion(), m.GetAnnotations()[initialEventsEndAnnotation] == "true", nil
}

// body returns the JSON body of obj to record and its identifying fields:
// the bytes the server sent for a *rawObject (with kind and apiVersion
// inserted first when missing, as from list items), the encoding of an
// *unstructured.Unstructured otherwise. With redact (Secrets) the values
// are replaced first, which means decoding a raw body.
func (s *stream) body(obj runtime.Object, redact bool) ([]byte, objectMeta, error) {
	kind, apiVersion := s.res.Kind, s.res.GVR().GroupVersion().String()
	var u *unstructured.Unstructured
	switch o := obj.(type) {
	case *rawObject:
		typeMetaUsable := (!o.meta.hasKind || o.meta.kind != "") && (!o.meta.hasAPIVersion || o.meta.apiVersion != "")
		if !redact && typeMetaUsable {
			raw, err := withTypeMeta(o.raw, o.meta, kind, apiVersion)
			m := o.meta
			if m.kind == "" {
				m.kind = kind
			}
			return raw, m, err
		}
		u = &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(o.raw); err != nil {
			return nil, objectMeta{}, err
		}
	case *unstructured.Unstructured:
		u = o
	default:
		return nil, objectMeta{}, fmt.Errorf("unexpected object %T", obj)
	}
	if redact {
		redactSecret(u)
	}
	if u.GetKind() == "" {
		u.SetKind(kind)
	}
	if u.GetAPIVersion() == "" {
		u.SetAPIVersion(apiVersion)
	}
	raw, err := u.MarshalJSON()
	return raw, objectMeta{
		kind:            u.GetKind(),
		apiVersion:      u.GetAPIVersion(),
		name:            u.GetName(),
		namespace:       u.GetNamespace(),
		uid:             string(u.GetUID()),
		resourceVersion: u.GetResourceVersion(),
	}, err
}

var (
	_ runtime.Serializer = rawObjectDecoder{}
	_ runtime.Serializer = rawEventDecoder{}
)
