package informer_test

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Widget is a tiny custom resource Go type, shaped like what controller-gen
// generates for a CRD: TypeMeta, ObjectMeta, a spec, and DeepCopyObject.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec `json:"spec"`
}

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	Size int `json:"size"`
}

// WidgetList is the list type the API server returns for widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// DeepCopyObject returns a deep copy of w.
func (w *Widget) DeepCopyObject() runtime.Object {
	out := &Widget{TypeMeta: w.TypeMeta, Spec: w.Spec}
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// DeepCopyObject returns a deep copy of l.
func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := &WidgetList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Widget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Widget)
	}
	return out
}

// widgetsGV is the API group and version of Widget.
var widgetsGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

// widgetsResource is the resource that serves widgets.
var widgetsResource = widgetsGV.WithResource("widgets")

// addWidgetTypes registers Widget and WidgetList in a scheme, as a generated
// AddToScheme does.
func addWidgetTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(widgetsGV, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(scheme, widgetsGV)
	return nil
}
