// Package gosource reads a Go package's declarations from its source, for
// tests that keep a document (OpenAPI, AsyncAPI) equal to the code: a
// constant added to the code without the document fails them.
//
// It may import the standard library only.
package gosource

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
)

// Const is one constant declared in a package.
type Const struct {
	Name string
	Type string // the declared type's name; empty when none is written or it is not a plain name
	File string
	// Value is the string literal's value when String; a constant of
	// another kind (a number, iota, an expression) has none.
	Value  string
	String bool
}

// Consts returns the constants declared in the non-test files of the Go
// package in dir, file by file in name order, each in declaration order.
func Consts(dir string) ([]Const, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []Const
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				for i, id := range vs.Names {
					c := Const{Name: id.Name, Type: typ, File: path}
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if c.Value, err = strconv.Unquote(lit.Value); err != nil {
								return nil, fmt.Errorf("%s: %s: %w", path, id.Name, err)
							}
							c.String = true
						}
					}
					out = append(out, c)
				}
			}
		}
	}
	return out, nil
}
