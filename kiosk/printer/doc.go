// Package printer prints badges on Brother QL label printers over TCP port
// 9100, in the printers' raster language, and keeps each print job on the
// appliance until the printer took it.
//
// It may import the standard library and kiosk/badge, whose Label table it
// shares; nothing of visits or stores.
//
// # Raster language
//
// Implemented from Brother's "Software Developer's Manual: Raster Command
// Reference" for the QL-800/810W/820NWB, checked against the QL-710W/720NW
// edition for the commands they share: invalidate (NULs), ESC @ initialize, ESC i S status
// request and its 32-byte reply, ESC i a 01 raster mode, ESC i ! automatic
// status notification, ESC i z print information, ESC i M various mode
// (auto cut), ESC i A cut every n labels, ESC i K expanded mode (cut at
// end), ESC i d margin, M compression (none or TIFF PackBits), g raster
// line, Z zero raster line, FF print and Control-Z print with feeding.
// [Encode] writes a job, [Decode] reads one back strictly; a [Simulator]
// answers like a printer and keeps what it printed. docs/decisions.md
// ("Badges and label printers (issue 16)") says what is left out.
//
// A raster line is the 720 pins of the head, 90 bytes, bit 0 the first
// byte's most significant. The image is mirrored across the head, as the
// reference's raster-line figure shows for a label read as it leaves the
// printer: column x of the image is bit 719-Offset-x, so the label's
// printable area is the line's bits Offset..Offset+Width-1 counted from its
// last bit.
//
// # Printing and the queue
//
// [Client.Print] asks the printer's status, refuses a printer without
// labels, with the wrong labels or its cover open, sends the job and waits
// for "printing completed". Its errors are [*Error] values whose Reason
// the kiosk turns into words. A [Queue] keeps one file per job so a job
// outlives a restart, and never sends a printed job again.
package printer
