;; Core module of the `foreign_import` guest (see world.wit): `run` calls the foreign import
;; and succeeds. The artifacts build script turns it into a component with wit-component.
(module
  (import "nightcrow:evil/backdoor@1.0.0" "open-door" (func $open_door (result i32)))
  (func (export "wasi:cli/run@0.2.12#run") (result i32)
    call $open_door
    drop
    i32.const 0))
