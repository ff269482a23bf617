package informer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informer/internal/wire"
)

// versionsPageSize is the page size of a versions list: the reflector's
// own (a page of 500 production-like pods' metadata is about 3.5 MB).
const versionsPageSize = 500

// versionsAccept asks for the list's metadata only, in protobuf if the
// server can (then it is read without decoding), in JSON otherwise.
const versionsAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// errVersionsList reports a versions list the server answered with an
// error, or with what is not a list of metadata.
var errVersionsList = errors.New("listing the objects' metadata")

// readListedVersions makes a consistent list (resourceVersion "") of the
// metadata at listURL, the resource path of a ListerWatcher, through
// client, with the selectors of options, in pages of versionsPageSize,
// and reads each item's namespace, name and resource version.
//
// It asks for no compression: on a loopback or in-cluster connection,
// inflating gzip cost the client more CPU than the bytes saved
// (docs/benchmarks.md, "E4 (q) on a quiet machine": 0.149 against
// 0.119 s for 5,000 production-like pods, most of the bytes their managed
// fields, which the server cannot leave out).
func readListedVersions(ctx context.Context, client *http.Client, listURL string, options metav1.ListOptions) (listedVersions, error) {
	out := listedVersions{versions: map[ObjectName]string{}}
	options.ResourceVersion, options.ResourceVersionMatch, options.Limit, options.Continue = "", "", versionsPageSize, ""
	options.Watch, options.AllowWatchBookmarks, options.SendInitialEvents, options.TimeoutSeconds = false, false, nil, nil
	for page := 0; ; page++ {
		meta, err := readVersionsPage(ctx, client, listURL, options, out.versions)
		if err != nil {
			return listedVersions{}, err
		}
		if page == 0 {
			out.resourceVersion = meta.ResourceVersion
		}
		if meta.Continue == "" {
			break
		}
		options.Continue = meta.Continue
	}
	if out.resourceVersion == "" {
		return listedVersions{}, fmt.Errorf("%w: the list has no resource version", errVersionsList)
	}
	return out, nil
}

// readVersionsPage reads one page of a versions list into versions and
// returns its list metadata.
func readVersionsPage(ctx context.Context, client *http.Client, listURL string, options metav1.ListOptions, versions map[ObjectName]string) (metav1.ListMeta, error) {
	var meta metav1.ListMeta
	query, err := restParameterCodec.EncodeParameters(&options, metaV1)
	if err != nil {
		return meta, fmt.Errorf("%w: %w", errVersionsList, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, listURL+"?"+url.Values(query).Encode(), nil)
	if err != nil {
		return meta, fmt.Errorf("%w: %w", errVersionsList, err)
	}
	req.Header.Set("Accept", versionsAccept)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		return meta, fmt.Errorf("%w: %w", errVersionsList, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// The body is a Status, in protobuf or JSON: its code and the
		// status line say enough for a reflector that then waits for a
		// bookmark instead.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return meta, fmt.Errorf("%w: %s", errVersionsList, resp.Status)
	}
	br := listReaders.Get().(*bufio.Reader)
	br.Reset(resp.Body)
	defer func() {
		br.Reset(nil)
		listReaders.Put(br)
	}()
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mediaType == "application/json" {
		return readJSONVersionsPage(br, versions)
	}
	metaBytes, ok, err := wire.ReadProtobufListVersions(br, "PartialObjectMetadataList", metadataItemsLayout, func(namespace, name, rv []byte) {
		versions[ObjectName{Namespace: string(namespace), Name: string(name)}] = string(rv)
	})
	switch {
	case !ok:
		return meta, fmt.Errorf("%w: a response of type %q that is not a list of metadata", errVersionsList, resp.Header.Get("Content-Type"))
	case err != nil:
		return meta, fmt.Errorf("%w: %w", errVersionsList, err)
	}
	if err := meta.Unmarshal(metaBytes); err != nil {
		return meta, fmt.Errorf("%w: its list metadata: %w", errVersionsList, err)
	}
	return meta, nil
}

// readJSONVersionsPage reads a PartialObjectMetadataList in JSON (what a
// server that cannot encode one in protobuf sends) into versions.
func readJSONVersionsPage(r io.Reader, versions map[ObjectName]string) (metav1.ListMeta, error) {
	var page struct {
		Kind     string          `json:"kind"`
		Metadata metav1.ListMeta `json:"metadata"`
		Items    []struct {
			Metadata struct {
				Namespace       string `json:"namespace"`
				Name            string `json:"name"`
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.NewDecoder(r).Decode(&page); err != nil {
		return metav1.ListMeta{}, fmt.Errorf("%w: %w", errVersionsList, err)
	}
	if page.Kind != "PartialObjectMetadataList" {
		return metav1.ListMeta{}, fmt.Errorf("%w: a JSON response of kind %s", errVersionsList, strconv.Quote(page.Kind))
	}
	for _, item := range page.Items {
		m := item.Metadata
		if m.Name == "" || m.ResourceVersion == "" {
			return metav1.ListMeta{}, fmt.Errorf("%w: %w", errVersionsList, wire.ErrNoVersion)
		}
		versions[ObjectName{Namespace: m.Namespace, Name: m.Name}] = m.ResourceVersion
	}
	return page.Metadata, nil
}
