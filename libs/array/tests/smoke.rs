use diffuse_array::{s, Array, ArrayContext, DType};

fn cx(procs: usize) -> ArrayContext {
    ArrayContext::new(
        diffuse::embedded(diffuse::EmbeddedConfig {
            procs: Some(procs),
            ..Default::default()
        })
        .unwrap(),
    )
}

#[test]
fn smoke() {
    for procs in 1..4 {
        let cx = cx(procs);
        let a = Array::from_vec(&cx, &[3, 5], (0..15).map(f64::from).collect()).unwrap();
        let b = a.slice(&s![1.., ..-1]).unwrap();
        assert_eq!(b.shape().as_slice(), &[2, 4]);
        let c = (&b * 2.0 + &b).unwrap();
        assert_eq!(
            c.to_vec::<f64>().unwrap(),
            vec![15.0, 18.0, 21.0, 24.0, 30.0, 33.0, 36.0, 39.0]
        );
        assert_eq!(a.sum().unwrap().item::<f64>().unwrap(), 105.0);
        let row = Array::from_vec(&cx, &[5], vec![1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let bc = (&a + &row).unwrap();
        assert_eq!(
            bc.to_vec::<f64>().unwrap()[5..10],
            [6.0, 8.0, 10.0, 12.0, 14.0]
        );
        let m = a.matvec(&row).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(m, vec![40.0, 115.0, 190.0]);
        let r = diffuse_array::random(
            &cx,
            &[7, 9],
            diffuse_array::Distribution::Uniform {
                low: 0.0,
                high: 1.0,
            },
            3,
            DType::F64,
        )
        .unwrap();
        let v = r.to_vec::<f64>().unwrap();
        let again = diffuse_array::random(
            &self::cx(1),
            &[7, 9],
            diffuse_array::Distribution::Uniform {
                low: 0.0,
                high: 1.0,
            },
            3,
            DType::F64,
        )
        .unwrap();
        assert_eq!(v, again.to_vec::<f64>().unwrap());
        let ar = diffuse_array::arange(&cx, 0.0, 10.0, 1.0, DType::I64).unwrap();
        assert_eq!(ar.to_vec::<i64>().unwrap(), (0..10).collect::<Vec<_>>());
        let ls = diffuse_array::linspace(&cx, 0.0, 1.0, 5, DType::F64).unwrap();
        assert_eq!(ls.to_vec::<f64>().unwrap(), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
        let mx = a.max().unwrap().item::<f64>().unwrap();
        assert_eq!(mx, 14.0);
        let mm = a
            .matmul(
                &a.slice(&s![.., ..3])
                    .unwrap()
                    .copy()
                    .unwrap()
                    .slice(&s![..3, ..])
                    .unwrap(),
            )
            .unwrap_err();
        let _ = mm;
        let sq = Array::from_vec(&cx, &[3, 3], (0..9).map(f64::from).collect()).unwrap();
        let p = sq.matmul(&sq).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(
            p,
            vec![15.0, 18.0, 21.0, 42.0, 54.0, 66.0, 69.0, 90.0, 111.0]
        );
        let w = diffuse_array::where_(&a.greater(7.0).unwrap(), &a, 0.0).unwrap();
        assert_eq!(
            w.sum().unwrap().item::<f64>().unwrap(),
            (8..15).sum::<i32>() as f64
        );
        let n = (a.norm().unwrap() * 1.0).unwrap().item::<f64>().unwrap();
        assert!((n - (0..15).map(|x| (x * x) as f64).sum::<f64>().sqrt()).abs() < 1e-12);
    }
}
