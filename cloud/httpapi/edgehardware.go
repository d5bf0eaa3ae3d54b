package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/strictjson"
)

// updateEdge is PATCH /v1/edges/{edge_id}: the edge's name, and its
// hardware (docs/decisions.md, "Hardware from the cloud (issue 17)"),
// decoded and checked by shared/hardware, the code the appliance reads its
// own configuration file with.
func (s *Server) updateEdge(c echo.Context) error {
	id, err := pathID(c, "edge_id", ids.Edge)
	if err != nil {
		return err
	}
	in, err := decode(c, false, parseEdge, func(_ context.Context, in cloud.EdgeInput) error { return s.svc.ValidateEdge(in) })
	if err != nil {
		return err
	}
	e, err := s.svc.UpdateEdge(c.Request().Context(), tenant(c), id, in)
	if errors.Is(err, cloud.ErrNotFound) {
		return notFound("edge", id)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, renderEdge(e))
}

func parseEdge(b *body) cloud.EdgeInput {
	in := cloud.EdgeInput{Name: b.str("name")}
	raw, present, isNull := b.take("hardware")
	switch {
	case !present:
	case isNull:
		in.Hardware = cloud.Some[*hardware.Document](nil)
	default:
		doc, problems := hardware.Parse(raw, nil)
		for _, p := range problems {
			b.errs.add(b.loc(strictjson.Join("hardware", p.Path)), "%s", p.Msg)
		}
		if len(problems) == 0 {
			in.Hardware = cloud.Some(&doc)
		}
	}
	return in
}

// renderHardware is an edge's hardware as the API shows it: the document
// as stored, every default spelt out; null when the cloud holds none.
func renderHardware(doc *hardware.Document) json.RawMessage {
	if doc == nil {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(doc)
	if err != nil { // strings, numbers and booleans: never
		return json.RawMessage("null")
	}
	return b
}
