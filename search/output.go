package search

// Scatter returns what the Pareto figure of a plan draws: every feasible candidate's step time
// and peak memory (unlabelled; the search kept lower bounds of the steps of those it never named,
// so it makes them exact first, on pr.Evals) and the winner, labelled. Its front is pr.Out.Front.
func (pr *Planned) Scatter() (all []Point, winner Point) {
	var bound []int
	for i := range pr.Evals {
		if pr.Evals[i].Bound {
			bound = append(bound, i)
		}
	}
	pr.Ev.Refine(pr.Evals, bound)
	for _, e := range pr.Evals {
		if e.Priced && e.Feasible {
			all = append(all, Point{Step: float64(e.Step), Peak: float64(e.Peak)})
		}
	}
	wi := pr.Order[0]
	winner = Point{Strategy: Label(pr.Ev.Space.Strategy(wi)), Step: float64(pr.Evals[wi].Step), Peak: float64(pr.Evals[wi].Peak)}
	return all, winner
}
