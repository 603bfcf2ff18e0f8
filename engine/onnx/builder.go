package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/nfbo/nfbo/engine/onnx/onnxpb"
	"google.golang.org/protobuf/proto"
)

// builder accumulates one ONNX model. Constants are initializers of the
// main graph, which Loop bodies see through ONNX's outer-scope rule, so a
// body never copies a weight.
type builder struct {
	root   *onnxpb.GraphProto
	n      int
	scalar map[string]string // cached scalar constants by type and value
}

func newBuilder(name string) *builder {
	return &builder{root: &onnxpb.GraphProto{Name: proto.String(name)}, scalar: map[string]string{}}
}

// graph is a (sub)graph under construction: nodes go to g, constants to the
// builder's root.
type graph struct {
	b *builder
	g *onnxpb.GraphProto
}

func (b *builder) main() *graph { return &graph{b: b, g: b.root} }

func (b *builder) fresh(prefix string) string {
	b.n++
	return fmt.Sprintf("%s_%d", prefix, b.n)
}

// node appends op with the given inputs and nOut fresh outputs.
func (g *graph) node(op string, inputs []string, nOut int, attrs ...*onnxpb.AttributeProto) []string {
	outs := make([]string, nOut)
	for i := range outs {
		outs[i] = g.b.fresh(op)
	}
	g.g.Node = append(g.g.Node, &onnxpb.NodeProto{
		OpType:    proto.String(op),
		Name:      proto.String(g.b.fresh("n_" + op)),
		Input:     inputs,
		Output:    outs,
		Attribute: attrs,
	})
	return outs
}

// op is node with one output.
func (g *graph) op(op string, inputs ...string) string { return g.node(op, inputs, 1)[0] }

func (g *graph) opA(op string, attrs []*onnxpb.AttributeProto, inputs ...string) string {
	return g.node(op, inputs, 1, attrs...)[0]
}

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func attrGraph(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

// constF32 adds a float32 initializer of the given shape.
func (b *builder) constF32(prefix string, shape []int64, data []float32) string {
	n := int64(1)
	for _, s := range shape {
		n *= s
	}
	if int64(len(data)) != n {
		panic(fmt.Sprintf("onnx: constant %s: %d values for shape %v", prefix, len(data), shape))
	}
	name := b.fresh(prefix)
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	// raw_data (little-endian) is the compact form ONNX Runtime reads fastest.
	b.root.Initializer = append(b.root.Initializer, &onnxpb.TensorProto{
		Name: proto.String(name), Dims: shape,
		DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
		RawData:  raw,
	})
	return name
}

func (b *builder) constI64(prefix string, shape []int64, data ...int64) string {
	name := b.fresh(prefix)
	b.root.Initializer = append(b.root.Initializer, &onnxpb.TensorProto{
		Name: proto.String(name), Dims: shape,
		DataType:  proto.Int32(int32(onnxpb.TensorProto_INT64)),
		Int64Data: data,
	})
	return name
}

// ints returns a cached 1-D int64 constant (axes, shapes, slice bounds).
func (b *builder) ints(v ...int64) string {
	key := fmt.Sprint("i64", v)
	if name, ok := b.scalar[key]; ok {
		return name
	}
	name := b.constI64("ints", []int64{int64(len(v))}, v...)
	b.scalar[key] = name
	return name
}

// scalarI64 returns a cached 0-D int64 constant.
func (b *builder) scalarI64(v int64) string {
	key := fmt.Sprint("si64", v)
	if name, ok := b.scalar[key]; ok {
		return name
	}
	name := b.constI64("si64", nil, v)
	b.scalar[key] = name
	return name
}

// f32 returns a cached 0-D float32 constant.
func (b *builder) f32(v float32) string {
	key := fmt.Sprint("f32", v)
	if name, ok := b.scalar[key]; ok {
		return name
	}
	name := b.constF32("f32", nil, []float32{v})
	b.scalar[key] = name
	return name
}

// f64 returns a cached 0-D float64 constant.
func (b *builder) f64(v float64) string {
	key := fmt.Sprint("f64", v)
	if name, ok := b.scalar[key]; ok {
		return name
	}
	name := b.fresh("f64")
	b.root.Initializer = append(b.root.Initializer, &onnxpb.TensorProto{
		Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_DOUBLE)),
		DoubleData: []float64{v},
	})
	b.scalar[key] = name
	return name
}

// boolConst returns a cached 0-D bool constant.
func (b *builder) boolConst(v bool) string {
	key := fmt.Sprint("bool", v)
	if name, ok := b.scalar[key]; ok {
		return name
	}
	name := b.fresh("bool")
	i := int32(0)
	if v {
		i = 1
	}
	b.root.Initializer = append(b.root.Initializer, &onnxpb.TensorProto{
		Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_BOOL)),
		Int32Data: []int32{i},
	})
	b.scalar[key] = name
	return name
}

// valueInfo describes a tensor; a dim < 0 is the symbolic batch "N".
func valueInfo(name string, elem onnxpb.TensorProto_DataType, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		if d < 0 {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "N"}})
		} else {
			shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
	}
	return &onnxpb.ValueInfoProto{
		Name: proto.String(name),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(int32(elem)), Shape: shape,
		}}},
	}
}

// model wraps the root graph in a ModelProto (IR 8, opset 17, the newest
// that Debian bookworm's python3-onnx 1.12 checker accepts).
func (b *builder) model(doc string) *onnxpb.ModelProto {
	return &onnxpb.ModelProto{
		IrVersion:       proto.Int64(IRVersion),
		OpsetImport:     []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(Opset)}},
		ProducerName:    proto.String("nfbo"),
		ProducerVersion: proto.String("1"),
		DocString:       proto.String(doc),
		Graph:           b.root,
	}
}

// Versions of the exported models.
const (
	IRVersion = 8
	Opset     = 17
)

// Common helpers on graphs.

func (g *graph) add(a, b string) string { return g.op("Add", a, b) }
func (g *graph) sub(a, b string) string { return g.op("Sub", a, b) }
func (g *graph) mul(a, b string) string { return g.op("Mul", a, b) }
func (g *graph) div(a, b string) string { return g.op("Div", a, b) }

// sliceLast returns x[..., lo:hi].
func (g *graph) sliceLast(x string, lo, hi int) string {
	return g.op("Slice", x, g.b.ints(int64(lo)), g.b.ints(int64(hi)), g.b.ints(-1))
}

// concatLast concatenates along the last axis.
func (g *graph) concatLast(xs ...string) string {
	return g.opA("Concat", []*onnxpb.AttributeProto{attrInt("axis", -1)}, xs...)
}

// dense returns x·W + b for a model.Dense given as initializer names.
func (g *graph) dense(x, w, b string) string {
	return g.add(g.op("MatMul", x, w), b)
}
