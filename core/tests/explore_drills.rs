//! The interview drill's designs: at least ten, each from a lesson, and
//! each one's answer is what the explorer really finds.

use locklab_core::explore::drill::{builtin, score, CHOICES};
use locklab_core::explore::{explore, Outcome};

#[test]
fn every_drill_breaks_the_way_its_answer_says() {
    let drills = builtin().expect("drills");
    assert!(drills.len() >= 10, "{}", drills.len());
    let lessons = locklab_core::lesson::builtin().expect("lessons");
    for d in &drills {
        assert!(
            lessons.iter().any(|l| l.id == d.drill.lesson),
            "{}: lesson {}",
            d.file,
            d.drill.lesson
        );
        assert!(CHOICES.contains(&d.drill.answer));
        let report = explore(&d.drill.design).expect("explores");
        let found = match &report.outcome {
            Outcome::Violated { invariant, .. } => Some(*invariant),
            Outcome::Held => None,
        };
        assert_eq!(found, Some(d.drill.answer), "{}:\n{}", d.file, report.transcript());
        assert!(score(d.drill.answer, found).right);
        let wrong = CHOICES
            .iter()
            .find(|c| **c != d.drill.answer)
            .copied()
            .expect("another");
        assert_eq!(score(wrong, found).points, 0);
    }
}
