package informer

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// TestDynamicListReportsStatus lists through the dynamic ListerWatcher,
// which sends its own list requests, from a server answering 410 Gone
// with a Status: the error is the Status's, as through the dynamic client,
// so that the reflector knows an expired continue token or resource
// version.
func TestDynamicListReportsStatus(t *testing.T) {
	body := []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}`)
	client := &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: http.StatusGone, Header: http.Header{"Content-Type": {runtime.ContentTypeJSON}},
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
		}, nil
	})}
	lw, err := newDynamicListerWatcher(&rest.Config{Host: "http://server"}, RESTOptions{Resource: corev1.SchemeGroupVersion.WithResource("pods"), HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	_, err = lw.List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("List = %v, want a ResourceExpired error", err)
	}
}
