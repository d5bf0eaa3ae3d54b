package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Names of people and visitors: first and family names of many origins,
// with the accents, particles and double names a European site sees, so
// that the search's folding and its prefixes meet what they will meet.
var firstNames = strings.Fields(`
Ada Adam Adèle Adrian Agnieszka Ahmed Aiko Aisha Alan Alejandro Aleksandra Alex Alice Amara Amelia Amir Ana
Anders Andrea Andrés Ángel Anja Anna Anne Antoine Arjun Astrid Ayşe Beatriz Ben Bernadette Björn Camille
Carlos Caroline Catalina Chen Chidi Chloé Christoph Claire Conor Daniel Dariusz David Deepak Diego Dmitri
Eamon Éléonore Elena Elif Elijah Élodie Emily Emma Emre Erik Esther Fatima Felix Fernando Finn Francesca
François Freya Gabriel Giulia Grace Guillaume Hana Hannah Hans Harper Héctor Helena Hiroshi Ingrid Isabel
Ivan Jakub Jan Javier Jean Jens Jiří Joana João Johanna John José Juan Julia Kai Kamala Karin Katarzyna
Kenji Kofi Lars Laura Lea Leila Leon Liam Lina Linnea Lucas Lucía Luis Łukasz Maja Malik Manon María
Marie Mario Marta Mateo Matteo Maximilian Mehmet Mei Mia Miguel Mikael Ming Mohammed Nadia Naomi Nia
Niamh Nikolai Noah Nora Oliver Olivia Olusegun Omar Oskar Pablo Paula Pedro Per Pierre Priya Rafael Rahul
Raphaël Ravi Rosa Ruth Saanvi Sakura Samuel Sara Sebastian Sergei Siobhán Sofia Søren Stefan Sven Tariq
Thomas Tomás Ugo Valentina Victor Wei William Xavier Yara Yuki Yusuf Zainab Zoë Zofia`)

var familyNames = strings.Fields(`
Abbott Adams Ahmed Almeida Andersen Andersson Bakker Banerjee Barbieri Baumann Becker Bernard Bianchi
Björk Blanc Böhm Bonnet Brown Bruno Byrne Campbell Carvalho Castro Chen Costa Cruz Dąbrowski Dahl Das
Dubois Dumont Durand Eriksson Esposito Evans Fernández Ferrari Fischer Fontaine Fraser Friedrich Fuchs
Gallagher García Garnier Gómez González Greco Gupta Hahn Hansen Hartmann Haugen Hernández Hoffmann Hopper
Horvat Huber Ibrahim Ivanova Jensen Johansson Jones Kaya Keller Kelly Kim Klein Kowalski Kozlov Krause
Kumar Larsen Laurent Lefebvre Lehmann Lewandowski Lindqvist Lopes López Lovelace Lund Maier Marino
Martin Martínez Meyer Moreau Morel Müller Murphy Nakamura Navarro Nielsen Novak Nowak O'Brien Okafor
Oliveira Olsen Park Patel Pereira Petrov Popescu Quinn Reddy Ricci Richter Rodríguez Romano Rossi Roux
Russo Sánchez Santos Sato Schmid Schmidt Schneider Schulz Schwarz Silva Singh Smith Sokolov Sørensen
Suzuki Svensson Takahashi Tanaka Taylor Thomas Turing Varga Vogel Wagner Walsh Wang Weber Williams Wilson
Wójcik Wolf Wright Yamamoto Yılmaz Zhang Zimmermann`)

// Particles and second names make some names longer, as real ones are.
var (
	particles   = []string{"van der", "de", "van", "von", "da", "di", "del", "Mac"}
	jobTitles   = strings.Split("Engineer,Senior Engineer,Product Manager,Designer,Account Executive,Sales Manager,Office Manager,Facilities Coordinator,Head of People,Recruiter,Finance Analyst,Controller,Legal Counsel,Data Scientist,Support Specialist,Operations Lead,Marketing Manager,Chief Executive,Chief Technology Officer,Security Officer,Warehouse Supervisor,Lab Technician,Researcher,Executive Assistant", ",")
	companies   = strings.Split("Acme Ltd,Globex,Initech,Umbrella Group,Stark Industries,Wayne Enterprises,Hooli,Vandelay Industries,Northwind Traders,Contoso,Fabrikam,Tyrell Corporation,Cyberdyne Systems,Soylent,Aperture Science,Wonka Industries,Gringotts,Oscorp,Massive Dynamic,Dunder Mifflin,Prestige Worldwide,Pied Piper,Monarch Solutions,Blue Sun,Virtucon,Duff Beverages,Krusty Co,Ollivanders,Bluth Company,Sterling Cooper", ",")
	teamNames   = strings.Split("Reception,Facilities,IT Service Desk,Sales,Marketing,Finance,Legal,People,Recruitment,Engineering,Product,Design,Security,Mailroom,Catering,Executive Office,Research,Laboratory,Warehouse,Customer Success,Partnerships,Procurement,Health and Safety,Events,Press Office", ",")
	typeNames   = map[string]string{"meeting": "Meeting", "interview": "Interview", "delivery": "Delivery", "contractor": "Contractor", "event": "Event", "other": "Other"}
	typeWeights = map[string]int{"meeting": 60, "interview": 10, "delivery": 10, "contractor": 10, "event": 5, "other": 5}
)

// personName is a random full name: mostly first and family name, some
// with a second first name, a particle or a double family name.
func personName(r *rand.Rand) string {
	first := firstNames[r.IntN(len(firstNames))]
	last := familyNames[r.IntN(len(familyNames))]
	switch n := r.IntN(100); {
	case n < 6:
		first += " " + firstNames[r.IntN(len(firstNames))]
	case n < 10:
		last = particles[r.IntN(len(particles))] + " " + last
	case n < 14:
		last += "-" + familyNames[r.IntN(len(familyNames))]
	}
	return first + " " + last
}

// ascii is s lower-cased with its accents dropped and its spaces and
// apostrophes removed, for an email's local part.
func ascii(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c == '.', c == '-':
			b.WriteRune(c)
		case c == ' ':
			b.WriteByte('.')
		default:
			if a, ok := plain[c]; ok {
				b.WriteString(a)
			}
		}
	}
	return b.String()
}

var plain = map[rune]string{'á': "a", 'à': "a", 'â': "a", 'ã': "a", 'ä': "a", 'å': "a", 'ą': "a", 'ç': "c", 'č': "c",
	'é': "e", 'è': "e", 'ê': "e", 'ë': "e", 'ě': "e", 'í': "i", 'ï': "i", 'ı': "i", 'ł': "l", 'ñ': "n", 'ó': "o", 'ö': "o",
	'ô': "o", 'ø': "o", 'ş': "s", 'ú': "u", 'ü': "u", 'ř': "r", 'ž': "z", 'ż': "z", 'ğ': "g", 'ð': "d", 'æ': "ae", 'œ': "oe", 'ß': "ss"}

// visitor is one visitor record behind visits.
type visitor struct {
	id, name, email, phone, company string
}

func newVisitor(r *rand.Rand, id string, i int) visitor {
	name := personName(r)
	co := companies[r.IntN(len(companies))]
	v := visitor{id: id, name: name, company: co}
	switch n := r.IntN(10); {
	case n < 7:
		v.email = fmt.Sprintf("%s%d@%s.example", ascii(name), i%97, ascii(strings.Fields(co)[0]))
	case n < 9:
		v.phone = fmt.Sprintf("+4477009%05d", i%100000)
	default:
		v.email = fmt.Sprintf("%s@example.org", ascii(name))
		v.phone = fmt.Sprintf("+3361234%04d", i%10000)
	}
	if r.IntN(5) == 0 {
		v.company = ""
	}
	return v
}

// prefix is what someone types to find name: 2 to 7 letters of one of its
// words (a first or a family name), sometimes with 1 to 3 of another.
func prefix(r *rand.Rand, name string) string {
	words := strings.Fields(name)
	i := r.IntN(len(words))
	w := []rune(words[i])
	q := string(w[:min(len(w), 2+r.IntN(6))])
	if len(words) > 1 && r.IntN(5) == 0 {
		o := []rune(words[(i+1+r.IntN(len(words)-1))%len(words)])
		q += " " + string(o[:min(len(o), 1+r.IntN(3))])
	}
	return q
}
