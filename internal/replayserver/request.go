package replayserver

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestOptions are the query parameters of a list or watch that the
// replay server honours (metav1.ListOptions'), parsed.
type requestOptions struct {
	watch bool
	// resourceVersion is the parameter as given; rv its value when it is a
	// number other than 0.
	resourceVersion string
	rv              uint64
	match           metav1.ResourceVersionMatch
	limit           int64
	continueToken   string
	// sendInitialEvents is nil when not given.
	sendInitialEvents *bool
	bookmarks         bool
	timeout           time.Duration
}

// parseListOptions parses a request's query, rejecting what a real server
// rejects and what this one does not serve (selectors).
func parseListOptions(q url.Values) (requestOptions, *metav1.Status) {
	var o requestOptions
	bad := func(format string, args ...any) (requestOptions, *metav1.Status) {
		return o, &apierrors.NewBadRequest(fmt.Sprintf(format, args...)).ErrStatus
	}
	var err error
	if o.watch, err = parseBool(q.Get("watch")); err != nil {
		return bad("watch: %v", err)
	}
	o.resourceVersion = q.Get("resourceVersion")
	if o.resourceVersion != "" && o.resourceVersion != "0" {
		if o.rv, err = strconv.ParseUint(o.resourceVersion, 10, 64); err != nil {
			return bad("invalid resource version %q", o.resourceVersion)
		}
	}
	o.match = metav1.ResourceVersionMatch(q.Get("resourceVersionMatch"))
	if s := q.Get("limit"); s != "" {
		if o.limit, err = strconv.ParseInt(s, 10, 64); err != nil || o.limit < 0 {
			return bad("invalid limit %q", s)
		}
	}
	o.continueToken = q.Get("continue")
	if o.continueToken != "" && o.resourceVersion != "" && o.resourceVersion != "0" {
		return bad("specifying resource version is not allowed when using continue")
	}
	if s := q.Get("sendInitialEvents"); s != "" {
		v, err := parseBool(s)
		if err != nil {
			return bad("sendInitialEvents: %v", err)
		}
		o.sendInitialEvents = &v
	}
	if o.bookmarks, err = parseBool(q.Get("allowWatchBookmarks")); err != nil {
		return bad("allowWatchBookmarks: %v", err)
	}
	if s := q.Get("timeoutSeconds"); s != "" {
		secs, err := strconv.ParseInt(s, 10, 64)
		if err != nil || secs < 0 {
			return bad("invalid timeoutSeconds %q", s)
		}
		o.timeout = time.Duration(secs) * time.Second
	}
	// apimachinery's ValidateListOptions, for lists and for watches.
	if o.match != "" && o.continueToken != "" {
		return bad("resourceVersionMatch is forbidden when continue is provided")
	}
	if o.watch {
		if o.sendInitialEvents != nil && o.match != metav1.ResourceVersionMatchNotOlderThan {
			return bad("sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
		}
		if o.match != "" && o.sendInitialEvents == nil {
			return bad("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
		}
		if o.match != "" && o.match != metav1.ResourceVersionMatchNotOlderThan {
			return bad("unsupported resourceVersionMatch %q for watch", o.match)
		}
	} else {
		switch {
		case o.match != "" && o.resourceVersion == "":
			return bad("resourceVersionMatch is forbidden unless resourceVersion is provided")
		case o.match != "" && o.match != metav1.ResourceVersionMatchExact && o.match != metav1.ResourceVersionMatchNotOlderThan:
			return bad("unsupported resourceVersionMatch %q", o.match)
		case o.match == metav1.ResourceVersionMatchExact && o.resourceVersion == "0":
			return bad("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"")
		case o.sendInitialEvents != nil:
			return bad("sendInitialEvents is forbidden for list")
		}
	}
	if q.Get("labelSelector") != "" || q.Get("fieldSelector") != "" {
		return bad("the replay server does not serve label or field selectors")
	}
	return o, nil
}

// parseBool parses a boolean query parameter ("" is false).
func parseBool(s string) (bool, error) {
	if s == "" {
		return false, nil
	}
	return strconv.ParseBool(s)
}

// continueToken is what a page's continue token holds: the list's resource
// version and the next pod to list. Clients treat it as opaque.
type continueToken struct {
	RV    uint64 `json:"rv"`
	Start int    `json:"start"`
}

// encode returns the token as a client sees it.
func (t continueToken) encode() string {
	raw, _ := json.Marshal(t) // two numbers: never fails
	return base64.RawURLEncoding.EncodeToString(raw)
}

// decodeContinue parses a continue token.
func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(raw, &t)
	}
	if err != nil || t.Start < 0 {
		return t, fmt.Errorf("invalid continue token")
	}
	return t, nil
}

// Errors as kube-apiserver reports them.

func notFound(path string) *metav1.Status {
	return &apierrors.NewNotFound(podsResource, path).ErrStatus
}

func methodNotAllowed(method string) *metav1.Status {
	return &apierrors.NewMethodNotSupported(podsResource, method).ErrStatus
}

func notAcceptable() *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: "the replay server serves only " + contentTypeProtobuf}
}

// tooOld is the "410 Gone" of a list or watch at a compacted resource
// version.
func tooOld(rv uint64) *metav1.Status {
	return &apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", rv)).ErrStatus
}

// continueExpired is the "410 Gone" of a continue token whose list's
// resource version is compacted.
func continueExpired() *metav1.Status {
	return &apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.").ErrStatus
}

// tooLarge is the error of a list at a resource version the server has not
// reached, as the watch cache reports it.
func tooLarge(asked, current uint64) *metav1.Status {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", asked, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version",
	}}
	return &err.ErrStatus
}

// podsResource names the resource in errors.
var podsResource = schema.GroupResource{Resource: "pods"}

// writeStatus writes st as an error response in protobuf.
func writeStatus(w http.ResponseWriter, st *metav1.Status) {
	body, err := encodeStatus(st)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentTypeProtobuf)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(body)
}
