package commands

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"reflect"
	"strings"

	"github.com/goaccel/goaccel/display/table"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// whos is %whos: the session's variables with their types, the memory
// their values hold and what they are, then its functions, types and
// constants, as a table (IPython's %whos, for Go).
func whos(env Env) frontend.MIMEBundle {
	var rows [][]any
	for _, v := range env.Values() {
		typ := v.Type
		if typ == "" && v.Value.IsValid() {
			typ = v.Value.Type().String()
		}
		size, info := describe(v.Value)
		rows = append(rows, []any{v.Name, "var", typ, size, info})
	}
	for _, d := range env.Declarations() {
		var kind string
		switch d.Kind {
		case session.KindFunc, session.KindMethod:
			kind = "func"
		case session.KindType:
			kind = "type"
		case session.KindConst:
			kind = "const"
		default:
			continue
		}
		names := d.Names
		if len(names) == 0 {
			names = []string{d.Name}
		}
		for _, n := range names {
			rows = append(rows, []any{n, kind, "", "", signature(d.Source)})
		}
	}
	if len(rows) == 0 {
		return frontend.MIMEBundle{"text/plain": "Interactive namespace is empty."}
	}
	t := table.FromRows([]string{"Name", "Kind", "Type", "Size", "Data/Info"}, rows)
	t.Numeric[3] = true
	return frontend.MIMEBundle{"text/plain": t.String(), "text/html": t.HTML()}
}

// signature is a function's declaration without its body, or another
// declaration's first line.
func signature(src string) string {
	fset := token.NewFileSet()
	if f, err := parser.ParseFile(fset, "", "package p\n"+src, 0); err == nil && len(f.Decls) == 1 {
		if fd, ok := f.Decls[0].(*ast.FuncDecl); ok {
			fd.Body = nil
			var b strings.Builder
			if printer.Fprint(&b, fset, fd) == nil {
				return b.String()
			}
		}
	}
	line, _, _ := strings.Cut(src, "\n")
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line), "{"))
}

// describe is the memory a value holds (its own and what its slice,
// string, array or map points to, shallowly) and a short description: the
// length of a collection, the value of anything else.
func describe(v reflect.Value) (size, info string) {
	if !v.IsValid() {
		return "", "<nil>"
	}
	bytes := int64(v.Type().Size())
	switch v.Kind() {
	case reflect.Slice:
		bytes += int64(v.Cap()) * int64(v.Type().Elem().Size())
		info = fmt.Sprintf("len %d, cap %d", v.Len(), v.Cap())
	case reflect.String:
		bytes += int64(v.Len())
		info = fmt.Sprintf("len %d: %q", v.Len(), v.String())
	case reflect.Array:
		info = fmt.Sprintf("len %d", v.Len())
	case reflect.Map:
		info = fmt.Sprintf("len %d", v.Len())
	case reflect.Chan:
		info = fmt.Sprintf("len %d, cap %d", v.Len(), v.Cap())
	default:
		info = plainText(valueOf(v))
	}
	return byteSize(bytes), info
}

func valueOf(v reflect.Value) any {
	if v.CanInterface() {
		return v.Interface()
	}
	return v.String()
}

// byteSize writes n bytes as B, KiB, MiB or GiB.
func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// plainText is a value as fmt prints it, a string quoted.
func plainText(v any) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprintf("<value could not be formatted: %v>", r)
		}
	}()
	if v == nil {
		return "<nil>"
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return fmt.Sprintf("%q", rv.String())
	}
	return fmt.Sprint(v)
}
