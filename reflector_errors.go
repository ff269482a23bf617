package informer

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// isExpiredError reports "410 Gone": the resource version is too old. Old
// servers said Gone, newer ones say Expired.
func isExpiredError(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isExpiredContinue reports that a continued list failed because its
// continue token expired.
func isExpiredContinue(err error, options metav1.ListOptions) bool {
	return apierrors.IsResourceExpired(err) && options.Continue != ""
}

// isTooLargeResourceVersionError reports that the requested resource
// version is newer than what the server has. Servers before 1.18.6 did not
// set the status cause and only said so in a timeout's message.
func isTooLargeResourceVersionError(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	var apiStatus apierrors.APIStatus
	if !errors.As(err, &apiStatus) {
		return false
	}
	status := apiStatus.Status()
	if status.Details != nil {
		for _, cause := range status.Details.Causes {
			if cause.Message == "Too large resource version" {
				return true
			}
		}
	}
	return strings.Contains(status.Message, "Too large resource version")
}

// isRetriableWatchError reports errors after which the watch is retried
// after a backoff rather than relisting: the server is overloaded (429) or
// unreachable (connection refused), and will most likely let the watch
// resume where it stopped.
func isRetriableWatchError(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}
